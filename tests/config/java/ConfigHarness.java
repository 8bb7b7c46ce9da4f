// Answers what Kafka's own configuration code says about a key, for tests/config/test_kafka_compat.py.
// One JSON request per line on stdin, one JSON answer per line on stdout (JsonLines).
//   {"op": "describe", "name": ..., "where": "streams"|"consumer"|"broker"}
//     -> {"known", "type", "required", "default" (ConfigDef's string form), "tmpdir"}
//   {"op": "check", "name": ..., "where": ..., "value": "<string>"}
//     -> {"accepted", "error"}: streams keys through the StreamsConfig constructor (ConfigDef plus its
//        own checks), consumer and broker keys through their ConfigDef's parse and validator.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.coordinator.group.GroupCoordinatorConfig;
import org.apache.kafka.streams.StreamsConfig;

public final class ConfigHarness {
    private static final ObjectMapper JSON = JsonLines.JSON;

    public static void main(final String[] args) throws Exception {
        JsonLines.serve(ConfigHarness::handle);
    }

    private static ConfigDef definitions(final String where) {
        switch (where) {
            case "streams": return StreamsConfig.configDef();
            case "consumer": return ConsumerConfig.configDef();
            case "broker": return GroupCoordinatorConfig.CONFIG_DEF;
            default: throw new IllegalArgumentException("unknown component " + where);
        }
    }

    private static ObjectNode handle(final JsonNode req) {
        final String name = req.get("name").asText();
        final String where = req.get("where").asText();
        final ConfigDef.ConfigKey key = definitions(where).configKeys().get(name);
        final ObjectNode out = JSON.createObjectNode();
        switch (req.get("op").asText()) {
            case "describe":
                out.put("known", key != null);
                out.put("tmpdir", System.getProperty("java.io.tmpdir"));
                if (key != null) {
                    out.put("type", key.type.name());
                    out.put("required", key.defaultValue == ConfigDef.NO_DEFAULT_VALUE);
                    out.put("default", key.hasDefault() ? ConfigDef.convertToString(key.defaultValue, key.type) : null);
                }
                return out;
            case "check":
                final String value = req.get("value").asText();
                try {
                    if (where.equals("streams")) {
                        final Map<String, Object> props = new HashMap<>();
                        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "app");
                        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:9092");
                        props.put(name, value);
                        new StreamsConfig(props);
                    } else {
                        final Object parsed = ConfigDef.parseType(name, value, key.type);
                        if (key.validator != null) {
                            key.validator.ensureValid(name, parsed);
                        }
                    }
                    out.put("accepted", true);
                } catch (final RuntimeException e) {
                    out.put("accepted", false);
                    out.put("error", e.getClass().getSimpleName() + ": " + e.getMessage());
                }
                return out;
            default:
                throw new IllegalArgumentException("unknown op " + req.get("op"));
        }
    }
}
