import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.Arrays;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * Kafka Streams' own word count, the reference for bench/processing.py: the same topology as
 * examples/word_count.py (flatMapValues split, groupBy word through a repartition topic named
 * "words", count into the store "word-counts", to the output topic), on the same topic and broker.
 *
 * Args: bootstrap input output application-id state-dir guarantee records threads.
 * It counts the records reaching the count (after the repartition topic) and, once all of them
 * have, closes the instance (its last commit included) and prints one JSON line: the seconds from
 * the first input record to the end of close, and its own CPU seconds and peak RSS.
 */
public class KafkaStreamsWordCount {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], input = args[1], output = args[2], appId = args[3], stateDir = args[4];
        String guarantee = args[5];
        long records = Long.parseLong(args[6]);
        int threads = Integer.parseInt(args[7]);

        AtomicLong firstNs = new AtomicLong(0);
        AtomicLong counted = new AtomicLong(0);
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
            .peek((k, v) -> firstNs.compareAndSet(0, System.nanoTime()))
            .flatMapValues(line -> Arrays.asList(line.split(" ")))
            .groupBy((k, word) -> word, Grouped.with("words", Serdes.String(), Serdes.String()))
            .aggregate(() -> 0L, (word, value, count) -> { counted.incrementAndGet(); return count + 1; },
                       Materialized.<String, Long, org.apache.kafka.streams.state.KeyValueStore<
                           org.apache.kafka.common.utils.Bytes, byte[]>>as("word-counts")
                           .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
            .toStream()
            .to(output, Produced.with(Serdes.String(), Serdes.Long()));

        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, guarantee);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, threads);
        props.put("auto.offset.reset", "earliest");

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        streams.start();
        while (counted.get() < records) {
            Thread.sleep(5);
        }
        streams.close(Duration.ofMinutes(5));
        long endNs = System.nanoTime();
        double seconds = (endNs - firstNs.get()) / 1e9;
        System.out.printf("{\"records\": %d, \"seconds\": %.3f, \"cpu_s\": %.2f, \"peak_rss_mb\": %.0f}%n",
                          counted.get(), seconds, cpuSeconds(), peakRssMb());
    }

    /** User + system CPU of this process, from /proc/self/stat (fields 14 and 15, in clock ticks of 1/100 s). */
    static double cpuSeconds() throws Exception {
        String stat = new String(Files.readAllBytes(Paths.get("/proc/self/stat")));
        String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        return (Long.parseLong(fields[11]) + Long.parseLong(fields[12])) / 100.0;
    }

    static double peakRssMb() throws Exception {
        for (String line : Files.readAllLines(Paths.get("/proc/self/status"))) {
            if (line.startsWith("VmHWM:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", "")) / 1024.0;
            }
        }
        return -1;
    }
}
