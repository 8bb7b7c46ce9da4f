package peers;

import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * Kafka Streams' own restore, for bench/peers/restore.py: an application whose RocksDB store "bench"
 * has a pre-filled changelog ({application.id}-bench-changelog, as many partitions as the input
 * topic {application.id}-input), started on an empty state directory and timed from start() to
 * RUNNING (every task restored: RocksDB's compaction during the restore included).
 *
 * <p>Arguments: bootstrap application.id state.dir num.stream.threads records. Prints one JSON line:
 * {"records": restored, "seconds": start to RUNNING, "restore_seconds": first restore start to last end}.
 */
public final class Restore {
    private Restore() {
    }

    public static void main(String[] args) throws InterruptedException {
        String appId = args[1];
        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        props.put(StreamsConfig.STATE_DIR_CONFIG, args[2]);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, Integer.parseInt(args[3]));

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(appId + "-input", Consumed.with(Serdes.Bytes(), Serdes.Bytes()))
            .groupByKey()
            .count(Materialized.<Bytes, Long, KeyValueStore<Bytes, byte[]>>as("bench"));

        AtomicLong restored = new AtomicLong();
        AtomicLong firstStart = new AtomicLong(Long.MAX_VALUE);
        AtomicLong lastEnd = new AtomicLong();
        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        streams.setGlobalStateRestoreListener(new StateRestoreListener() {
            @Override
            public void onRestoreStart(TopicPartition tp, String store, long start, long end) {
                firstStart.accumulateAndGet(System.nanoTime(), Math::min);
            }

            @Override
            public void onBatchRestored(TopicPartition tp, String store, long batchEnd, long count) {
                restored.addAndGet(count);
            }

            @Override
            public void onRestoreEnd(TopicPartition tp, String store, long total) {
                lastEnd.accumulateAndGet(System.nanoTime(), Math::max);
            }
        });
        CountDownLatch running = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            if (now == KafkaStreams.State.RUNNING) {
                running.countDown();
            }
        });
        long started = System.nanoTime();
        streams.start();
        // RUNNING can come before any task is assigned: wait until every record is restored too.
        long expected = Long.parseLong(args[4]);
        while (!running.await(50, TimeUnit.MILLISECONDS) || restored.get() < expected
               || streams.state() != KafkaStreams.State.RUNNING) {
            if (streams.state() == KafkaStreams.State.ERROR) {
                throw new IllegalStateException("Kafka Streams failed");
            }
        }
        long ready = System.nanoTime();
        streams.close();
        System.out.printf("{\"records\": %d, \"seconds\": %.3f, \"restore_seconds\": %.3f}%n", restored.get(),
            (ready - started) / 1e9, (lastEnd.get() - firstStart.get()) / 1e9);
    }
}
