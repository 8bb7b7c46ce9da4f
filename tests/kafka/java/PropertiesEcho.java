import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.Map;
import java.util.Properties;

/**
 * Loads .properties files exactly as Kafka's Utils.loadProps and log4j2 do (Properties.load of an
 * InputStream) and prints what Java read. One request per stdin line: the file's bytes in hex. One
 * answer per line: "key=value" pairs separated by spaces, each side the hex of its UTF-16 code units
 * (so lone surrogates and any other char survive the trip), or "error <message>".
 */
public final class PropertiesEcho {
    public static void main(String[] args) throws Exception {
        HexFormat hex = HexFormat.of();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            StringBuilder answer = new StringBuilder();
            try {
                Properties properties = new Properties();
                properties.load(new ByteArrayInputStream(hex.parseHex(line)));
                for (Map.Entry<Object, Object> entry : properties.entrySet()) {
                    answer.append(units((String) entry.getKey())).append('=')
                          .append(units((String) entry.getValue())).append(' ');
                }
            } catch (Exception e) {
                answer.setLength(0);
                answer.append("error ").append(e.toString().replace('\n', ' '));
            }
            System.out.println(answer.toString().trim());
        }
    }

    private static String units(String text) {
        StringBuilder out = new StringBuilder(text.length() * 4);
        for (int i = 0; i < text.length(); i++) {
            out.append(String.format("%04x", (int) text.charAt(i)));
        }
        return out.toString();
    }
}
