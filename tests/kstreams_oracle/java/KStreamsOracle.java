// The Kafka Streams oracle: reference topologies written with Kafka Streams' own DSL and run by its own
// TopologyTestDriver (kafka-streams-test-utils). tests/kstreams_oracle/ writes the same topologies with
// streams_rt's DSL and runs both on the same scenarios; outputs and final stores must be equal.
//
// Request (one JSON line): {"op": "run", "topology": NAME, "caching": BOOL,
//                           "events": [["record", topic, key, value, timestamp] | ["advance", ms], ...]}
// Answer: {"outputs": {topic: [[key, value, timestamp], ...]},
//          "stores": {name: [[key, value, timestamp], ...]            key-value stores
//                            [[key, start, end, value, timestamp], ...] window stores}}
// or {"ok": false, "error": ...} when Kafka Streams itself throws (a scenario's user code failing).
// Keys and values are JSON strings, numbers or null, as each topic's serdes read them.
//
// Every lambda here has a twin in tests/kstreams_oracle/topologies.py; change both together.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.function.Consumer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Branched;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.BuiltInDslStoreSuppliers;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.apache.kafka.streams.state.WindowStore;
import org.apache.kafka.streams.state.internals.LeftOrRightValue;
import org.apache.kafka.streams.state.internals.TimeOrderedKeyValueBuffer;
import org.apache.kafka.streams.state.internals.TimestampedKeyAndJoinSide;
import org.apache.kafka.streams.state.internals.WrappedStateStore;

public final class KStreamsOracle {
    private static final Serde<String> STRING = Serdes.String();
    private static final Serde<Long> LONG = Serdes.Long();

    /** A reference topology: how to build it, the serdes of the topics a scenario touches, and those of
     *  its window stores' values (read as bytes, see windowRows). */
    private record Reference(Consumer<StreamsBuilder> build, Map<String, Serde<?>[]> inputs,
                             Map<String, Serde<?>[]> outputs, Map<String, Serde<?>> storeValues) {
        Reference(final Consumer<StreamsBuilder> build, final Map<String, Serde<?>[]> inputs,
                  final Map<String, Serde<?>[]> outputs) {
            this(build, inputs, outputs, Map.of());
        }
    }

    private static Map<String, Serde<?>[]> topics(final Object... namesAndSerdes) {
        final Map<String, Serde<?>[]> found = new LinkedHashMap<>();
        for (int i = 0; i < namesAndSerdes.length; i += 3) {
            found.put((String) namesAndSerdes[i], new Serde<?>[] {(Serde<?>) namesAndSerdes[i + 1], (Serde<?>) namesAndSerdes[i + 2]});
        }
        return found;
    }

    private static KStream<String, String> input(final StreamsBuilder b) {
        return b.stream("input", Consumed.with(STRING, STRING));
    }

    private static final Map<String, Reference> REFERENCES = new LinkedHashMap<>();

    static {
        REFERENCES.put("stateless", new Reference(b -> {
            final KStream<String, String> s = input(b);
            s.filter((k, v) -> v != null && v.length() % 2 == 0).mapValues(v -> v.toUpperCase()).to("out-filter-map");
            s.filterNot((k, v) -> k == null).selectKey((k, v) -> v == null || v.isEmpty() ? null : v.substring(0, 1))
                .to("out-select-key");
            s.flatMapValues(v -> v == null ? List.<String>of() : chars(v)).to("out-flat-values");
            s.map((k, v) -> KeyValue.pair(v, k)).to("out-swap");
            s.flatMap((k, v) -> {
                final List<KeyValue<String, String>> out = new ArrayList<>();
                final int n = v == null ? 0 : v.length() % 3;
                for (int i = 0; i < n; i++) {
                    out.add(KeyValue.pair(k == null ? "k" + i : k + i, v));
                }
                return out;
            }).peek((k, v) -> { }).to("out-flat-map");
        }, topics("input", STRING, STRING),
            topics("out-filter-map", STRING, STRING, "out-select-key", STRING, STRING, "out-flat-values", STRING, STRING,
                   "out-swap", STRING, STRING, "out-flat-map", STRING, STRING)));

        REFERENCES.put("branch_merge", new Reference(b -> {
            final Map<String, KStream<String, String>> branches = input(b)
                .flatMapValues(v -> v == null ? List.<String>of("~") : chars(v))
                .split(Named.as("b-"))
                .branch((k, v) -> v.equals("a"), Branched.as("a"))
                .branch((k, v) -> v.equals("b"), Branched.as("b"))
                .defaultBranch(Branched.as("rest"));
            final KStream<String, String> a = branches.get("b-a").mapValues(v -> v + "!");
            final KStream<String, String> bs = branches.get("b-b").filter((k, v) -> k != null);
            final KStream<String, String> rest = branches.get("b-rest").mapValues(v -> v + v);
            a.merge(bs).merge(rest).to("out");
        }, topics("input", STRING, STRING), topics("out", STRING, STRING)));

        REFERENCES.put("merge_sources", new Reference(b -> {
            final KStream<String, String> left = b.stream("input", Consumed.with(STRING, STRING));
            final KStream<String, String> right = b.stream("input-2", Consumed.with(STRING, STRING));
            left.merge(right.mapValues(v -> v == null ? null : "r:" + v)).to("out");
        }, topics("input", STRING, STRING, "input-2", STRING, STRING), topics("out", STRING, STRING)));

        REFERENCES.put("count", new Reference(b -> {
            input(b).groupByKey().count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts"))
                .toStream().to("out", Produced.with(STRING, LONG));
        }, topics("input", STRING, STRING), topics("out", STRING, LONG)));

        REFERENCES.put("reduce", new Reference(b -> {
            input(b).groupByKey().reduce((agg, v) -> agg + v,
                    Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("reduced"))
                .toStream().to("out");
        }, topics("input", STRING, STRING), topics("out", STRING, STRING)));

        REFERENCES.put("aggregate_group_by", new Reference(b -> {
            input(b).groupBy((k, v) -> v == null || v.isEmpty() ? null : v.substring(0, 1), Grouped.as("by-first"))
                .aggregate(() -> "", (k, v, agg) -> agg + (k == null ? "" : k) + v,
                           Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("aggregated"))
                .toStream().to("out");
        }, topics("input", STRING, STRING), topics("out", STRING, STRING)));

        REFERENCES.put("windowed_count_tumbling", new Reference(b -> {
            input(b).groupByKey().windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(10), Duration.ofMillis(5)))
                .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("wcounts"))
                .toStream((wk, v) -> wk.key() + "@" + wk.window().start()).to("out", Produced.with(STRING, LONG));
        }, topics("input", STRING, STRING), topics("out", STRING, LONG), Map.of("wcounts", LONG)));

        REFERENCES.put("windowed_reduce_hopping", new Reference(b -> {
            input(b).groupByKey()
                .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(10), Duration.ofMillis(3)).advanceBy(Duration.ofMillis(5)))
                .reduce((agg, v) -> agg + (v == null ? "~" : v),
                        Materialized.<String, String, WindowStore<Bytes, byte[]>>as("wreduced"))
                .toStream((wk, v) -> wk.key() + "@" + wk.window().start()).to("out");
        }, topics("input", STRING, STRING), topics("out", STRING, STRING), Map.of("wreduced", STRING)));

        REFERENCES.put("session_windows", new Reference(b -> {
            final KGroupedStream<String, String> grouped = input(b).groupByKey();
            grouped.windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(5), Duration.ofMillis(3)))
                .count(Materialized.<String, Long, SessionStore<Bytes, byte[]>>as("scounts"))
                .toStream((wk, v) -> sessionKey(wk)).to("out-count", Produced.with(STRING, LONG));
            grouped.windowedBy(SessionWindows.ofInactivityGapWithNoGrace(Duration.ofMillis(4)))
                .aggregate(() -> "", (k, v, agg) -> agg + (v == null ? "~" : v), (k, a, c) -> a + "|" + c,
                           Materialized.<String, String, SessionStore<Bytes, byte[]>>as("saggs"))
                .toStream((wk, v) -> sessionKey(wk)).to("out-agg");
        }, topics("input", STRING, STRING), topics("out-count", STRING, LONG, "out-agg", STRING, STRING),
            Map.of("scounts", LONG, "saggs", STRING)));

        REFERENCES.put("session_reduce_on_close", new Reference(b -> {
            input(b).groupByKey()
                .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(6), Duration.ofMillis(2)))
                .emitStrategy(EmitStrategy.onWindowClose())
                .reduce((agg, v) -> agg + v, Materialized.<String, String, SessionStore<Bytes, byte[]>>as("sreduced")
                        .withRetention(Duration.ofMillis(30)))
                .toStream((wk, v) -> sessionKey(wk)).to("out");
        }, topics("input", STRING, STRING), topics("out", STRING, STRING), Map.of("sreduced", STRING)));

        REFERENCES.put("sliding_windows", new Reference(b -> {
            final KGroupedStream<String, String> grouped = input(b).groupByKey();
            grouped.windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(5), Duration.ofMillis(3)))
                .aggregate(() -> "", (k, v, agg) -> agg + v,
                           Materialized.<String, String, WindowStore<Bytes, byte[]>>as("slide"))
                .toStream((wk, v) -> wk.key() + "@" + wk.window().start() + "-" + wk.window().end()).to("out-agg");
            grouped.windowedBy(SlidingWindows.ofTimeDifferenceWithNoGrace(Duration.ofMillis(12)))
                .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("slide-counts"))
                .toStream((wk, v) -> wk.key() + "@" + wk.window().start() + "-" + wk.window().end())
                .to("out-count", Produced.with(STRING, LONG));
        }, topics("input", STRING, STRING), topics("out-agg", STRING, STRING, "out-count", STRING, LONG),
            Map.of("slide", STRING, "slide-counts", LONG)));

        REFERENCES.put("sliding_reduce_on_close", new Reference(b -> {
            input(b).groupByKey()
                .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(4), Duration.ofMillis(2)))
                .emitStrategy(EmitStrategy.onWindowClose())
                .reduce((agg, v) -> agg + v, Materialized.<String, String, WindowStore<Bytes, byte[]>>as("slide-reduced"))
                .toStream((wk, v) -> wk.key() + "@" + wk.window().start() + "-" + wk.window().end()).to("out");
        }, topics("input", STRING, STRING), topics("out", STRING, STRING), Map.of("slide-reduced", STRING)));

        REFERENCES.put("windowed_count_on_close", new Reference(b -> {
            input(b).groupByKey()
                .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(10), Duration.ofMillis(2)).advanceBy(Duration.ofMillis(5)))
                .emitStrategy(EmitStrategy.onWindowClose())
                .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("wcounts-final").withRetention(Duration.ofMillis(40)))
                .toStream((wk, v) -> wk.key() + "@" + wk.window().start()).to("out", Produced.with(STRING, LONG));
        }, topics("input", STRING, STRING), topics("out", STRING, LONG), Map.of("wcounts-final", LONG)));

        REFERENCES.put("suppress_window_closes", new Reference(b -> {
            final KGroupedStream<String, String> grouped = input(b).groupByKey();
            grouped.windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(10), Duration.ofMillis(2)))
                .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("final-counts"))
                .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()))
                .toStream((wk, v) -> wk.key() + "@" + wk.window().start()).to("out-windows", Produced.with(STRING, LONG));
            grouped.windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(5), Duration.ofMillis(2)))
                .reduce((agg, v) -> agg + v, Materialized.<String, String, SessionStore<Bytes, byte[]>>as("final-sessions"))
                .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.maxRecords(100).shutDownWhenFull())
                              .withName("sessions-closed"))
                .toStream((wk, v) -> sessionKey(wk)).to("out-sessions");
        }, topics("input", STRING, STRING), topics("out-windows", STRING, LONG, "out-sessions", STRING, STRING),
            Map.of("final-counts", LONG, "final-sessions", STRING)));

        REFERENCES.put("suppress_time_limit", new Reference(b -> {
            final KGroupedStream<String, String> grouped = input(b).groupByKey();
            grouped.count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("limited-counts"))
                .suppress(Suppressed.untilTimeLimit(Duration.ofMillis(7), Suppressed.BufferConfig.maxRecords(2)))
                .toStream().to("out-counts", Produced.with(STRING, LONG));
            grouped.reduce((agg, v) -> agg + v, Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("limited-concat"))
                .suppress(Suppressed.untilTimeLimit(Duration.ofMillis(4), Suppressed.BufferConfig.unbounded()).withName("concat-limit"))
                .toStream().to("out-concat");
        }, topics("input", STRING, STRING), topics("out-counts", STRING, LONG, "out-concat", STRING, STRING)));

        REFERENCES.put("table", new Reference(b -> {
            b.table("input", Consumed.with(STRING, STRING),
                    Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("table-store"))
                .toStream().to("out");
        }, topics("input", STRING, STRING), topics("out", STRING, STRING)));

        REFERENCES.put("stream_table_join", new Reference(b -> {
            final KTable<String, String> table = b.table("table-input", Consumed.with(STRING, STRING),
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("joined-table"));
            final KStream<String, String> stream = input(b);
            stream.join(table, (sv, tv) -> sv + "+" + tv).to("out-inner");
            stream.leftJoin(table, (sv, tv) -> sv + "+" + tv).to("out-left");
        }, topics("input", STRING, STRING, "table-input", STRING, STRING),
            topics("out-inner", STRING, STRING, "out-left", STRING, STRING)));

        REFERENCES.put("repartition_count", new Reference(b -> {
            input(b).selectKey((k, v) -> v)
                .repartition(Repartitioned.<String, String>as("rekeyed").withKeySerde(STRING).withValueSerde(STRING))
                .groupByKey().count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("rcounts"))
                .toStream().to("out", Produced.with(STRING, LONG));
        }, topics("input", STRING, STRING), topics("out", STRING, LONG)));

        REFERENCES.put("stream_stream_join", new Reference(b -> {
            final KStream<String, String> left = input(b);
            final KStream<String, String> right = b.stream("input-2", Consumed.with(STRING, STRING));
            left.join(right, (l, r) -> l + "+" + r, JoinWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(15), Duration.ofMillis(3)),
                      StreamJoined.<String, String, String>with(STRING, STRING, STRING).withName("sj").withStoreName("sjs"))
                .to("out");
        }, topics("input", STRING, STRING, "input-2", STRING, STRING), topics("out", STRING, STRING)));

        REFERENCES.put("stream_stream_left_join", new Reference(b -> {
            final KStream<String, String> left = input(b);
            final KStream<String, String> right = b.stream("input-2", Consumed.with(STRING, STRING));
            left.leftJoin(right, (l, r) -> l + "+" + r, JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofMillis(6)).before(Duration.ofMillis(2)))
                .mapValues(v -> v + "!").to("out");
        }, topics("input", STRING, STRING, "input-2", STRING, STRING), topics("out", STRING, STRING)));

        REFERENCES.put("stream_stream_outer_join", new Reference(b -> {
            final KStream<String, String> left = input(b);
            final KStream<String, String> right = b.stream("input-2", Consumed.with(STRING, STRING));
            left.outerJoin(right, (l, r) -> l + "+" + r, JoinWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(4), Duration.ofMillis(5)).after(Duration.ofMillis(7)))
                .to("out");
        }, topics("input", STRING, STRING, "input-2", STRING, STRING), topics("out", STRING, STRING)));

        REFERENCES.put("processor", new Reference(b -> {
            b.addStateStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("sums"), STRING, STRING));
            input(b).filter((k, v) -> v == null || !v.equals("x"))
                .process(ConcatProcessor::new, "sums").to("out");
        }, topics("input", STRING, STRING), topics("out", STRING, STRING)));

        REFERENCES.put("processor_routing", new Reference(b -> {
            final KStream<String, String> routed = input(b).process(RoutingProcessor::new, Named.as("router"));
            routed.to("out-evens", Produced.as("evens"));
            routed.mapValues(v -> v == null ? null : v.toUpperCase(), Named.as("odds")).to("out-odds");
        }, topics("input", STRING, STRING), topics("out-evens", STRING, STRING, "out-odds", STRING, STRING)));
    }

    /** Per key, the concatenation of its values (null as "~"), forwarded on every update; every 10 ms of
     *  stream time a ("tick", "<number of keys>@<stream time>") record, every 15 ms of wall-clock time a
     *  ("wall", "<number of keys>@<wall-clock time>") record stamped with the stream time. */
    private static final class ConcatProcessor implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;
        private KeyValueStore<String, String> store;

        @Override
        public void init(final ProcessorContext<String, String> context) {
            this.context = context;
            this.store = context.getStateStore("sums");
            context.schedule(Duration.ofMillis(10), PunctuationType.STREAM_TIME, time -> {
                long keys = 0;
                try (KeyValueIterator<String, String> all = store.all()) {
                    while (all.hasNext()) {
                        all.next();
                        keys++;
                    }
                }
                context.forward(new Record<>("tick", keys + "@" + time, time));
            });
            context.schedule(Duration.ofMillis(15), PunctuationType.WALL_CLOCK_TIME, time -> {
                final long streamTime = Math.max(0, context.currentStreamTimeMs());
                context.forward(new Record<>("wall", store.approximateNumEntries() + "@" + time, streamTime));
            });
        }

        @Override
        public void process(final Record<String, String> record) {
            if (record.key() == null) {
                return;
            }
            final String old = store.get(record.key());
            final String updated = (old == null ? "" : old) + (record.value() == null ? "~" : record.value());
            store.put(record.key(), updated);
            context.forward(record.withValue(updated));
        }
    }

    /** Routes each record by name: values of even length to the child "evens", others (and nulls) to
     *  "odds"; a record with key "both" goes to both, "odds" first. */
    private static final class RoutingProcessor implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;

        @Override
        public void init(final ProcessorContext<String, String> context) {
            this.context = context;
        }

        @Override
        public void process(final Record<String, String> record) {
            if ("both".equals(record.key())) {
                context.forward(record, "odds");
                context.forward(record.withValue(record.value() + "!"), "evens");
                return;
            }
            final boolean even = record.value() != null && record.value().length() % 2 == 0;
            context.forward(record, even ? "evens" : "odds");
        }
    }

    private static String sessionKey(final Windowed<String> wk) {
        return wk.key() + "@" + wk.window().start() + "-" + wk.window().end();
    }

    private static List<String> chars(final String value) {
        final List<String> out = new ArrayList<>();
        for (final char c : value.toCharArray()) {
            out.add(String.valueOf(c));
        }
        return out;
    }

    public static void main(final String[] args) throws Exception {
        JsonLines.serve(request -> {
            final String op = request.get("op").asText();
            if (op.equals("topologies")) {
                final ObjectNode answer = JsonLines.JSON.createObjectNode();
                final ArrayNode names = answer.putArray("names");
                REFERENCES.keySet().forEach(names::add);
                return answer;
            }
            if (!op.equals("run")) {
                throw new IllegalArgumentException("unknown op " + op);
            }
            return run(request);
        });
    }

    private static ObjectNode run(final JsonNode request) throws Exception {
        final String name = request.get("topology").asText();
        final Reference reference = REFERENCES.get(name);
        if (reference == null) {
            throw new IllegalArgumentException("no reference topology " + name);
        }
        final StreamsBuilder builder = new StreamsBuilder();
        reference.build().accept(builder);
        final Topology topology = builder.build();
        final Path stateDir = Files.createTempDirectory("kstreams-oracle");
        final Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "oracle");
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        // In-memory DSL stores: the same semantics as RocksDB's, without a database per scenario.
        props.put(StreamsConfig.DSL_STORE_SUPPLIERS_CLASS_CONFIG, BuiltInDslStoreSuppliers.InMemoryDslStoreSuppliers.class);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, request.get("caching").asBoolean() ? 10 * 1024 * 1024 : 0);
        // The reference's own properties (the twins share them: the Python side sends them).
        request.path("properties").fields().forEachRemaining(p -> props.put(p.getKey(), p.getValue().asText()));
        final ObjectNode answer = JsonLines.JSON.createObjectNode();
        try (TopologyTestDriver driver = new TopologyTestDriver(topology, props, Instant.ofEpochMilli(0))) {
            final Map<String, TestInputTopic<Object, Object>> inputs = new LinkedHashMap<>();
            reference.inputs().forEach((topic, serdes) -> inputs.put(topic, inputTopic(driver, topic, serdes)));
            for (final JsonNode event : request.get("events")) {
                final String kind = event.get(0).asText();
                if (kind.equals("record")) {
                    final String topic = event.get(1).asText();
                    final Serde<?>[] serdes = reference.inputs().get(topic);
                    inputs.get(topic).pipeInput(fromJson(event.get(2), serdes[0]), fromJson(event.get(3), serdes[1]),
                                                event.get(4).asLong());
                } else if (kind.equals("advance")) {
                    driver.advanceWallClockTime(Duration.ofMillis(event.get(1).asLong()));
                } else {
                    throw new IllegalArgumentException("unknown event " + kind);
                }
            }
            final ObjectNode outputs = answer.putObject("outputs");
            for (final Map.Entry<String, Serde<?>[]> topic : reference.outputs().entrySet()) {
                final ArrayNode rows = outputs.putArray(topic.getKey());
                final TestOutputTopic<?, ?> out = driver.createOutputTopic(
                    topic.getKey(), topic.getValue()[0].deserializer(), topic.getValue()[1].deserializer());
                out.readRecordsToList().forEach(r -> {
                    final ArrayNode row = rows.addArray();
                    row.add(toJson(r.key()));
                    row.add(toJson(r.value()));
                    row.add(r.timestamp());
                });
            }
            final ObjectNode stores = answer.putObject("stores");
            for (final String store : driver.getAllStateStores().keySet()) {
                stores.set(store, storeRows(driver, store, reference));
            }
        } finally {
            deleteTree(stateDir);
        }
        return answer;
    }

    @SuppressWarnings("unchecked")
    private static TestInputTopic<Object, Object> inputTopic(final TopologyTestDriver driver, final String topic,
                                                             final Serde<?>[] serdes) {
        return driver.createInputTopic(topic, ((Serde<Object>) serdes[0]).serializer(),
                                       ((Serde<Object>) serdes[1]).serializer());
    }

    /** A window store's rows as its byte store holds them. Read below the caching layer: Kafka's caching
     *  window store answers windows that retention has already expired from its cache (clean entries
     *  outlive the expiry), where the store itself (and its changelog) no longer has them. */
    @SuppressWarnings("unchecked")
    private static ArrayNode windowRows(final StateStore outer, final Serde<?> values) {
        final ArrayNode rows = JsonLines.JSON.createArrayNode();
        try (KeyValueIterator<Windowed<Bytes>, byte[]> all = ((WindowStore<Bytes, byte[]>) belowCache(outer)).all()) {
            all.forEachRemaining(kv -> {
                final ByteBuffer stored = ByteBuffer.wrap(kv.value);
                final long timestamp = stored.getLong();
                final byte[] value = Arrays.copyOfRange(kv.value, 8, kv.value.length);
                rows.addArray().add(new String(kv.key.key().get(), StandardCharsets.UTF_8))
                    .add(kv.key.window().start()).add(kv.key.window().end())
                    .add(toJson(values.deserializer().deserialize("", value))).add(timestamp);
            });
        }
        return rows;
    }

    /** A session store's rows as its byte store holds them (below the cache, as windowRows). */
    @SuppressWarnings("unchecked")
    private static ArrayNode sessionRows(final StateStore outer, final Serde<?> values) {
        final ArrayNode rows = JsonLines.JSON.createArrayNode();
        try (KeyValueIterator<Windowed<Bytes>, byte[]> all =
                 ((SessionStore<Bytes, byte[]>) belowCache(outer)).findSessions(0, Long.MAX_VALUE)) {
            all.forEachRemaining(kv -> rows.addArray().add(new String(kv.key.key().get(), StandardCharsets.UTF_8))
                .add(kv.key.window().start()).add(kv.key.window().end())
                .add(toJson(values.deserializer().deserialize("", kv.value))).addNull());
        }
        return rows;
    }

    /** The byte store under the metering and caching layers of a DSL store. */
    private static StateStore belowCache(final StateStore outer) {
        StateStore store = outer;
        while (store instanceof WrappedStateStore<?, ?, ?> wrapped
               && (store == outer || store.getClass().getSimpleName().startsWith("Caching"))) {
            store = wrapped.wrapped();
        }
        return store;
    }

    private static ArrayNode storeRows(final TopologyTestDriver driver, final String name, final Reference reference) {
        final ArrayNode rows = JsonLines.JSON.createArrayNode();
        if (driver.getAllStateStores().get(name) instanceof TimeOrderedKeyValueBuffer<?, ?, ?> buffer) {
            // a suppress buffer, which exposes no iteration: how many updates it holds, and the earliest time
            if (buffer.numRecords() > 0) {
                rows.addArray().add("records").add(buffer.numRecords());
                rows.addArray().add("min_time").add(buffer.minTimestamp());
            }
            return rows;
        }
        if (driver.getSessionStore(name) != null) {
            return sessionRows(driver.getAllStateStores().get(name), reference.storeValues().get(name));
        }
        final KeyValueStore<Object, ValueAndTimestamp<Object>> timestamped = driver.getTimestampedKeyValueStore(name);
        if (timestamped != null) {
            try (KeyValueIterator<Object, ValueAndTimestamp<Object>> all = timestamped.all()) {
                all.forEachRemaining(kv -> rows.addArray().add(toJson(kv.key)).add(toJson(kv.value.value()))
                    .add(kv.value.timestamp()));
            }
            return rows;
        }
        final WindowStore<Object, ValueAndTimestamp<Object>> timestampedWindows = driver.getTimestampedWindowStore(name);
        if (timestampedWindows != null && reference.storeValues().containsKey(name)) {
            return windowRows(driver.getAllStateStores().get(name), reference.storeValues().get(name));
        }
        if (timestampedWindows != null) {  // a join's window store (never cached): its values and timestamps
            try (KeyValueIterator<Windowed<Object>, ValueAndTimestamp<Object>> all = timestampedWindows.all()) {
                all.forEachRemaining(kv -> rows.addArray().add(toJson(kv.key.key())).add(kv.key.window().start())
                    .add(kv.key.window().end()).add(toJson(kv.value.value())).add(kv.value.timestamp()));
            }
            return rows;
        }
        final WindowStore<Object, Object> windows = driver.getWindowStore(name);
        if (windows != null) {  // a join's window store before Kafka 4.4 (no timestamps: a record's is its window's start)
            try (KeyValueIterator<Windowed<Object>, Object> all = windows.all()) {
                all.forEachRemaining(kv -> rows.addArray().add(toJson(kv.key.key())).add(kv.key.window().start())
                    .add(kv.key.window().end()).add(toJson(kv.value)).add(kv.key.window().start()));
            }
            return rows;
        }
        final KeyValueStore<Object, Object> plain = driver.getKeyValueStore(name);
        if (plain != null) {
            try (KeyValueIterator<Object, Object> all = plain.all()) {
                all.forEachRemaining(kv -> {
                    if (kv.key instanceof TimestampedKeyAndJoinSide<?> held) {  // a left/outer join's waiting records
                        final LeftOrRightValue<?, ?> value = (LeftOrRightValue<?, ?>) kv.value;
                        rows.addArray().add(toJson(held.key())).add(held.isLeftSide() ? "left" : "right")
                            .add(toJson(held.isLeftSide() ? value.leftValue() : value.rightValue())).add(held.timestamp());
                    } else {
                        rows.addArray().add(toJson(kv.key)).add(toJson(kv.value)).addNull();
                    }
                });
            }
            return rows;
        }
        throw new IllegalStateException("store " + name + " is of a kind the oracle does not read");
    }

    private static void deleteTree(final Path root) throws java.io.IOException {
        try (var paths = Files.walk(root)) {
            paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }

    private static Object fromJson(final JsonNode node, final Serde<?> serde) {
        if (node == null || node.isNull()) {
            return null;
        }
        if (serde == LONG) {
            return node.asLong();
        }
        return node.asText();
    }

    private static JsonNode toJson(final Object value) {
        if (value == null) {
            return JsonLines.JSON.nullNode();
        }
        if (value instanceof Long l) {
            return JsonLines.JSON.getNodeFactory().numberNode(l);
        }
        return JsonLines.JSON.getNodeFactory().textNode(value.toString());
    }
}
