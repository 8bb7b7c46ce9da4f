// The loop every Java test harness runs: one JSON request per line on stdin, one JSON answer per line on
// stdout ({"ok": true, ...} or {"ok": false, "error": ...}). Kafka's loggers may write to System.out, so
// the real stdout is kept for answers only.

import com.fasterxml.jackson.core.json.JsonWriteFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

public final class JsonLines {
    public static final ObjectMapper JSON = JsonMapper.builder().enable(JsonWriteFeature.ESCAPE_NON_ASCII).build();

    public interface Handler {
        ObjectNode handle(JsonNode request) throws Exception;
    }

    private JsonLines() {}

    public static void serve(final Handler handler) throws Exception {
        final PrintStream answers = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        System.setOut(System.err);
        final BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            ObjectNode answer;
            try {
                answer = handler.handle(JSON.readTree(line));
                answer.put("ok", true);
            } catch (final Exception e) {
                answer = JSON.createObjectNode();
                answer.put("ok", false);
                answer.put("error", e.getClass().getName() + ": " + e.getMessage());
            }
            answers.println(JSON.writeValueAsString(answer));
        }
    }
}
