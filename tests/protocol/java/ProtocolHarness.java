// Runs Kafka Streams' own SubscriptionInfo and AssignmentInfo for the compatibility tests and the
// benchmark. One JSON request per line on stdin, one JSON answer per line on stdout (JsonLines); bytes travel as hex.
// Collections are built as LinkedHashMap/LinkedHashSet so that Kafka iterates them in the order given.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.lang.reflect.Field;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.internals.generated.SubscriptionInfoData;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.assignment.ProcessId;
import org.apache.kafka.streams.processor.internals.assignment.AssignmentInfo;
import org.apache.kafka.streams.processor.internals.assignment.SubscriptionInfo;
import org.apache.kafka.streams.processor.internals.assignment.StreamsAssignmentProtocolVersions;
import org.apache.kafka.streams.state.HostInfo;

public final class ProtocolHarness {
    private static final ObjectMapper JSON = JsonLines.JSON;
    private static final HexFormat HEX = HexFormat.of();

    public static void main(final String[] args) throws Exception {
        JsonLines.serve(ProtocolHarness::handle);
    }

    private static ObjectNode handle(final JsonNode req) throws Exception {
        switch (req.get("op").asText()) {
            case "latest_supported_version": {
                final ObjectNode out = JSON.createObjectNode();
                out.put("latest", StreamsAssignmentProtocolVersions.LATEST_SUPPORTED_VERSION);
                out.put("earliestProbeable", StreamsAssignmentProtocolVersions.EARLIEST_PROBEABLE_VERSION);
                return out;
            }
            case "sub_encode": return hexAnswer(subscription(req).encode());
            case "sub_decode": return describe(SubscriptionInfo.decode(bytes(req)));
            case "asg_encode": return hexAnswer(assignment(req).encode());
            case "asg_decode": return describe(AssignmentInfo.decode(bytes(req)));
            case "bench": return bench(req);
            default: throw new IllegalArgumentException("unknown op " + req.get("op"));
        }
    }

    private static ByteBuffer bytes(final JsonNode req) {
        return ByteBuffer.wrap(HEX.parseHex(req.get("hex").asText()));
    }

    private static ObjectNode hexAnswer(final ByteBuffer buffer) {
        final ObjectNode out = JSON.createObjectNode();
        out.put("hex", hex(buffer));
        return out;
    }

    private static String hex(final ByteBuffer buffer) {
        final ByteBuffer copy = buffer.duplicate();
        copy.rewind();
        final byte[] raw = new byte[copy.remaining()];
        copy.get(raw);
        return HEX.formatHex(raw);
    }

    private static String text(final JsonNode node) {
        return node == null || node.isNull() ? null : node.asText();
    }

    private static TaskId task(final JsonNode node) {
        return new TaskId(node.get(0).asInt(), node.get(1).asInt(), text(node.get(2)));
    }

    private static ArrayNode taskJson(final TaskId task) {
        final ArrayNode out = JSON.createArrayNode();
        out.add(task.subtopology());
        out.add(task.partition());
        out.add(task.topologyName());
        return out;
    }

    private static SubscriptionInfo subscription(final JsonNode req) {
        final Map<TaskId, Long> sums = new LinkedHashMap<>();
        for (final JsonNode entry : req.get("sums")) {
            sums.put(task(entry.get(0)), entry.get(1).asLong());
        }
        final Map<String, String> tags = new LinkedHashMap<>();
        for (final JsonNode entry : req.get("tags")) {
            tags.put(entry.get(0).asText(), entry.get(1).asText());
        }
        return new SubscriptionInfo(
            req.get("version").asInt(),
            req.get("latest").asInt(),
            new ProcessId(UUID.fromString(req.get("processId").asText())),
            text(req.get("endpoint")),
            sums,
            (byte) req.get("unique").asInt(),
            req.get("error").asInt(),
            tags);
    }

    private static ObjectNode describe(final SubscriptionInfo info) throws Exception {
        final ObjectNode out = JSON.createObjectNode();
        out.put("version", info.version());
        out.put("latest", info.latestSupportedVersion());
        if (info.version() > StreamsAssignmentProtocolVersions.LATEST_SUPPORTED_VERSION) {
            out.put("future", true);
            return out;
        }
        out.put("future", false);
        out.put("processId", info.processId().id().toString());
        out.put("endpoint", info.userEndPoint());
        final ArrayNode sums = out.putArray("sums");
        for (final Map.Entry<TaskId, Long> e : info.taskOffsetSums().entrySet()) {
            final ArrayNode entry = sums.addArray();
            entry.add(taskJson(e.getKey()));
            entry.add(e.getValue());
        }
        final ArrayNode prev = out.putArray("prev");
        info.prevTasks().forEach(t -> prev.add(taskJson(t)));
        final ArrayNode standby = out.putArray("standby");
        info.standbyTasks().forEach(t -> standby.add(taskJson(t)));
        final Field data = SubscriptionInfo.class.getDeclaredField("data");
        data.setAccessible(true);
        out.put("unique", ((SubscriptionInfoData) data.get(info)).uniqueField());
        out.put("error", info.errorCode());
        final ArrayNode tags = out.putArray("tags");
        info.clientTags().forEach((k, v) -> tags.addArray().add(k).add(v));
        out.put("reencoded", hex(info.encode()));
        return out;
    }

    private static Set<TopicPartition> partitions(final JsonNode node) {
        final Set<TopicPartition> out = new LinkedHashSet<>();
        for (final JsonNode tp : node) {
            out.add(new TopicPartition(tp.get(0).asText(), tp.get(1).asInt()));
        }
        return out;
    }

    private static Map<HostInfo, Set<TopicPartition>> hostMap(final JsonNode node) {
        final Map<HostInfo, Set<TopicPartition>> out = new LinkedHashMap<>();
        for (final JsonNode entry : node) {
            out.put(new HostInfo(entry.get(0).get(0).asText(), entry.get(0).get(1).asInt()), partitions(entry.get(1)));
        }
        return out;
    }

    private static AssignmentInfo assignment(final JsonNode req) {
        final List<TaskId> active = new ArrayList<>();
        req.get("active").forEach(t -> active.add(task(t)));
        final Map<TaskId, Set<TopicPartition>> standby = new LinkedHashMap<>();
        for (final JsonNode entry : req.get("standby")) {
            standby.put(task(entry.get(0)), partitions(entry.get(1)));
        }
        final AssignmentInfo info = new AssignmentInfo(
            req.get("version").asInt(),
            req.get("commonly").asInt(),
            active,
            standby,
            hostMap(req.get("byHost")),
            hostMap(req.get("standbyByHost")),
            req.get("error").asInt());
        info.setNextRebalanceTime(req.get("nextRebalance").asLong());
        return info;
    }

    private static ArrayNode partitionsJson(final Set<TopicPartition> partitions) {
        final ArrayNode out = JSON.createArrayNode();
        partitions.forEach(tp -> out.addArray().add(tp.topic()).add(tp.partition()));
        return out;
    }

    private static ArrayNode hostMapJson(final Map<HostInfo, Set<TopicPartition>> map) {
        final ArrayNode out = JSON.createArrayNode();
        if (map != null) {
            map.forEach((host, tps) -> {
                final ArrayNode entry = out.addArray();
                entry.addArray().add(host.host()).add(host.port());
                entry.add(partitionsJson(tps));
            });
        }
        return out;
    }

    private static ObjectNode describe(final AssignmentInfo info) {
        final ObjectNode out = JSON.createObjectNode();
        out.put("version", info.version());
        out.put("commonly", info.commonlySupportedVersion());
        final ArrayNode active = out.putArray("active");
        info.activeTasks().forEach(t -> active.add(taskJson(t)));
        final ArrayNode standby = out.putArray("standby");
        info.standbyTasks().forEach((t, tps) -> standby.addArray().add(taskJson(t)).add(partitionsJson(tps)));
        out.set("byHost", hostMapJson(info.partitionsByHost()));
        out.set("standbyByHost", hostMapJson(info.standbyPartitionByHost()));
        out.put("error", info.errCode());
        out.put("nextRebalance", info.nextRebalanceMs());
        out.put("reencoded", hex(info.encode()));
        return out;
    }

    // Decode then encode the given bytes `iterations` times after `warmup` untimed rounds; nanoseconds per round.
    private static ObjectNode bench(final JsonNode req) {
        final byte[] raw = HEX.parseHex(req.get("hex").asText());
        final boolean isSubscription = "subscription".equals(req.get("kind").asText());
        final int warmup = req.get("warmup").asInt();
        final int iterations = req.get("iterations").asInt();
        final ArrayNode times = JSON.createArrayNode();
        long sink = 0;
        for (int i = 0; i < warmup + iterations; i++) {
            final long start = System.nanoTime();
            final ByteBuffer encoded = isSubscription
                ? SubscriptionInfo.decode(ByteBuffer.wrap(raw)).encode()
                : AssignmentInfo.decode(ByteBuffer.wrap(raw)).encode();
            final long elapsed = System.nanoTime() - start;
            sink += encoded.remaining();
            if (i >= warmup) {
                times.add(elapsed);
            }
        }
        final ObjectNode out = JSON.createObjectNode();
        out.set("nanos", times);
        out.put("bytes", sink / (warmup + iterations));
        return out;
    }
}
