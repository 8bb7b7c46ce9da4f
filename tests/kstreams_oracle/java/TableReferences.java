// The table operators' reference topologies (KTable filter/mapValues/toStream, groupBy with count,
// reduce and aggregate, table-table joins, the foreign-key join, cogroup), written
// with Kafka Streams' DSL; their twins are in tests/kstreams_oracle/table_topologies.py. Every lambda
// has a twin there; change both together.

import java.time.Duration;
import java.util.Map;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KGroupedTable;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.TableJoined;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.WindowStore;

final class TableReferences {
    private TableReferences() {
    }

    private static final Consumed<String, String> STRINGS = Consumed.with(KStreamsOracle.STRING, KStreamsOracle.STRING);

    private static Materialized<String, String, KeyValueStore<Bytes, byte[]>> store(final String name) {
        return Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as(name);
    }

    private static Map<String, org.apache.kafka.common.serialization.Serde<?>[]> strings(final String... topics) {
        final Object[] spec = new Object[topics.length * 3];
        for (int i = 0; i < topics.length; i++) {
            spec[3 * i] = topics[i];
            spec[3 * i + 1] = KStreamsOracle.STRING;
            spec[3 * i + 2] = KStreamsOracle.STRING;
        }
        return KStreamsOracle.topics(spec);
    }

    private static String firstOrNull(final String v) {
        return v.isEmpty() ? null : v.substring(0, 1);
    }

    static void register(final Map<String, KStreamsOracle.Reference> references) {
        // A table read without a store: not materialized, so its filter cannot know old values and
        // sends a tombstone for every rejected update.
        references.put("table_filter_map", new KStreamsOracle.Reference(b -> {
            final KTable<String, String> t = b.table("input", STRINGS);
            t.filter((k, v) -> v.length() % 2 == 0).toStream().to("out-filter");
            t.filterNot((k, v) -> v.contains("a"), store("without-a")).toStream().to("out-filter-not");
            t.mapValues(v -> v + "!").toStream().to("out-map");
            t.mapValues(v -> v.toUpperCase(), store("upper")).filter((k, v) -> !v.startsWith("B")).toStream()
                .to("out-chain");
        }, strings("input"), strings("out-filter", "out-filter-not", "out-map", "out-chain")));

        // A materialized table: its filters get old values and send tombstones only for keys that were there.
        references.put("table_filter_map_materialized", new KStreamsOracle.Reference(b -> {
            final KTable<String, String> t = b.table("input", STRINGS, store("source"));
            t.filter((k, v) -> v.length() % 2 == 0).toStream().to("out-filter");
            t.mapValues(v -> v + v).filter((k, v) -> v.length() > 4).toStream().to("out-chain");
            t.filterNot((k, v) -> v.startsWith("b"), store("not-b")).mapValues(v -> "<" + v + ">").toStream()
                .to("out-not-b");
        }, strings("input"), strings("out-filter", "out-chain", "out-not-b")));

        references.put("table_group_by", new KStreamsOracle.Reference(b -> {
            final KGroupedTable<String, String> g = b.table("input", STRINGS)
                .groupBy((k, v) -> KeyValue.pair(firstOrNull(v), k), Grouped.with(KStreamsOracle.STRING, KStreamsOracle.STRING));
            g.count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts")).toStream()
                .to("out-count", Produced.with(KStreamsOracle.STRING, KStreamsOracle.LONG));
            g.reduce((agg, v) -> agg + v, (agg, v) -> agg.replaceFirst(v, ""), store("reduced")).toStream().to("out-reduce");
            g.aggregate(() -> "", (k, v, agg) -> agg + "+" + v, (k, v, agg) -> agg + "-" + v, store("aggregated"))
                .toStream().to("out-aggregate");
        }, strings("input"), KStreamsOracle.topics("out-count", KStreamsOracle.STRING, KStreamsOracle.LONG,
                                                  "out-reduce", KStreamsOracle.STRING, KStreamsOracle.STRING,
                                                  "out-aggregate", KStreamsOracle.STRING, KStreamsOracle.STRING)));

        // Generated names: a named operation uses up an index, a stream's repartition three (sink,
        // filter, source); a named grouping shares its repartition topic between two aggregations.
        references.put("table_names", new KStreamsOracle.Reference(b -> {
            final KTable<String, Long> counts = b.stream("input", STRINGS).filter((k, v) -> v != null, Named.as("non-null"))
                .groupBy((k, v) -> v).count();
            counts.toStream().to("out-counts", Produced.with(KStreamsOracle.STRING, KStreamsOracle.LONG));
            final KGroupedTable<String, String> regrouped = counts
                .groupBy((k, n) -> KeyValue.pair(String.valueOf(n), k), Grouped.<String, String>as("regroup")
                    .withKeySerde(KStreamsOracle.STRING).withValueSerde(KStreamsOracle.STRING));
            regrouped.count().toStream().to("out-recount", Produced.with(KStreamsOracle.STRING, KStreamsOracle.LONG));
            regrouped.reduce((agg, v) -> agg + "," + v, (agg, v) -> agg.replaceFirst("," + v, "")).toStream().to("out-keys");
        }, strings("input"), KStreamsOracle.topics("out-counts", KStreamsOracle.STRING, KStreamsOracle.LONG,
                                                  "out-recount", KStreamsOracle.STRING, KStreamsOracle.LONG,
                                                  "out-keys", KStreamsOracle.STRING, KStreamsOracle.STRING)));

        references.put("table_join", new KStreamsOracle.Reference(b -> {
            final KTable<String, String> left = b.table("input", STRINGS);
            final KTable<String, String> right = b.table("input-2", STRINGS, store("right"));
            left.join(right, (l, r) -> l + "/" + r).toStream().to("out-inner");
            left.leftJoin(right, (l, r) -> l + "/" + r).toStream().to("out-left");
            left.outerJoin(right, (l, r) -> l + "/" + r, store("outer")).toStream().to("out-outer");
        }, strings("input", "input-2"), strings("out-inner", "out-left", "out-outer")));

        // Joins of derived tables (read through their parents' stores) and of a join's result.
        references.put("table_join_derived", new KStreamsOracle.Reference(b -> {
            final KTable<String, String> left = b.table("input", STRINGS).filter((k, v) -> !v.isEmpty());
            final KTable<String, String> right = b.table("input-2", STRINGS).mapValues(v -> v.toUpperCase());
            final KTable<String, String> joined = left.leftJoin(right, (l, r) -> l + "/" + r);
            joined.toStream().to("out-joined");
            joined.outerJoin(left.mapValues(v -> String.valueOf(v.length())), (j, n) -> j + "|" + n).toStream()
                .to("out-again");
        }, strings("input", "input-2"), strings("out-joined", "out-again")));

        references.put("fk_join", new KStreamsOracle.Reference(b -> {
            final KTable<String, String> orders = b.table("input", STRINGS, store("orders"));
            final KTable<String, String> customers = b.table("input-2", STRINGS);
            orders.join(customers, TableReferences::firstOrNull, (o, c) -> o + "/" + c).toStream().to("out-inner");
            orders.leftJoin(customers, TableReferences::firstOrNull, (o, c) -> o + "/" + c, store("fk-left"))
                .toStream().to("out-left");
        }, strings("input", "input-2"), strings("out-inner", "out-left")));

        // A named foreign-key join of derived tables (a filter over an unmaterialized table, a mapped
        // one), its unmaterialized result regrouped: the result gets Kafka's generated store.
        references.put("fk_join_derived", new KStreamsOracle.Reference(b -> {
            final KTable<String, String> orders = b.table("input", STRINGS).filter((k, v) -> !v.equals("x"));
            final KTable<String, String> customers = b.table("input-2", STRINGS).mapValues(v -> v + "!");
            final KTable<String, String> joined = orders.leftJoin(customers, TableReferences::firstOrNull,
                (o, c) -> o + "/" + c, TableJoined.as("fk"));
            joined.toStream().to("out-joined");
            joined.groupBy((k, v) -> KeyValue.pair(v.substring(0, 1), k), Grouped.with(KStreamsOracle.STRING, KStreamsOracle.STRING))
                .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("fk-counts")).toStream()
                .to("out-count", Produced.with(KStreamsOracle.STRING, KStreamsOracle.LONG));
        }, strings("input", "input-2"), KStreamsOracle.topics("out-joined", KStreamsOracle.STRING, KStreamsOracle.STRING,
                                                            "out-count", KStreamsOracle.STRING, KStreamsOracle.LONG)));

        // Tables made by aggregations: a filter of a count (its old values known, so no tombstone
        // for a count never even), a mapped count joined with a reduce's table.
        references.put("aggregate_tables", new KStreamsOracle.Reference(b -> {
            final KTable<String, Long> counts = b.stream("input", STRINGS).groupByKey()
                .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts"));
            counts.filter((k, n) -> n % 2 == 0).toStream().to("out-even", Produced.with(KStreamsOracle.STRING, KStreamsOracle.LONG));
            final KTable<String, String> last = b.stream("input-2", STRINGS).groupByKey().reduce((a, v) -> v + a);
            counts.mapValues(n -> "n" + n, Materialized.with(KStreamsOracle.STRING, KStreamsOracle.STRING))
                .join(last, (n, v) -> n + "/" + v).toStream().to("out-joined");
        }, strings("input", "input-2"), KStreamsOracle.topics("out-even", KStreamsOracle.STRING, KStreamsOracle.LONG,
                                                            "out-joined", KStreamsOracle.STRING, KStreamsOracle.STRING)));

        // Tables read through value getters: a stream joined with a filtered, mapped table (neither
        // materialized), the table outer-joined with that view, the join's result regrouped.
        references.put("table_getters", new KStreamsOracle.Reference(b -> {
            final KTable<String, String> t = b.table("input-2", STRINGS);
            final KTable<String, String> derived = t.filter((k, v) -> !v.startsWith("b")).mapValues(v -> v + "?");
            b.stream("input", STRINGS).leftJoin(derived, (s, v) -> s + "/" + v).to("out-stream-join");
            final KTable<String, String> joined = t.outerJoin(derived, (a, c) -> a + "|" + c);
            joined.groupBy((k, v) -> KeyValue.pair(v.substring(0, 1), v), Grouped.with(KStreamsOracle.STRING, KStreamsOracle.STRING))
                .reduce((a, v) -> a + v, (a, v) -> a.replace(v, ""), store("by-first")).toStream().to("out-grouped");
        }, strings("input", "input-2"), strings("out-stream-join", "out-grouped")));

        // A windowed aggregation's table, filtered and mapped (its values read with Windowed keys).
        references.put("windowed_table", new KStreamsOracle.Reference(b -> {
            final KTable<org.apache.kafka.streams.kstream.Windowed<String>, Long> counts = b.stream("input", STRINGS)
                .groupByKey().windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(10), Duration.ofMillis(5)))
                .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("wcounts"));
            counts.filter((wk, n) -> n > 1).toStream((wk, n) -> wk.key() + "@" + wk.window().start())
                .to("out-filter", Produced.with(KStreamsOracle.STRING, KStreamsOracle.LONG));
            counts.mapValues(n -> "n" + n).filter((wk, v) -> !v.equals("n2")).toStream((wk, v) -> wk.key() + "@" + wk.window().start())
                .to("out-map");
        }, strings("input"), KStreamsOracle.topics("out-filter", KStreamsOracle.STRING, KStreamsOracle.LONG,
                                                  "out-map", KStreamsOracle.STRING, KStreamsOracle.STRING),
            Map.of("wcounts", KStreamsOracle.LONG)));

        references.put("cogroup", new KStreamsOracle.Reference(b -> {
            final KGroupedStream<String, String> one = b.stream("input", STRINGS).groupByKey();
            final KGroupedStream<String, String> two = b.stream("input-2", STRINGS).groupBy((k, v) -> v == null ? null : firstOrNull(v));
            one.<String>cogroup((k, v, agg) -> agg + "1" + v)
                .cogroup(two, (k, v, agg) -> agg + "2" + v)
                .aggregate(() -> "", store("cogrouped")).toStream().to("out");
        }, strings("input", "input-2"), strings("out")));

        references.put("cogroup_windowed", new KStreamsOracle.Reference(b -> {
            final KGroupedStream<String, String> one = b.stream("input", STRINGS).groupByKey();
            final KGroupedStream<String, String> two = b.stream("input-2", STRINGS).groupByKey();
            one.<String>cogroup((k, v, agg) -> agg + "1" + v)
                .cogroup(two, (k, v, agg) -> agg + "2" + v)
                .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(10), Duration.ofMillis(5)))
                .aggregate(() -> "", Materialized.<String, String, WindowStore<Bytes, byte[]>>as("wcogrouped"))
                .toStream((wk, v) -> wk.key() + "@" + wk.window().start()).to("out");
        }, strings("input", "input-2"), strings("out"), Map.of("wcogrouped", KStreamsOracle.STRING)));
    }
}
