package peers;

import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TaskMetadata;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * The workload of bench/peers in Kafka Streams: per-key count and sum of the amounts (values are
 * decimal strings), kept as "count,sum" in a RocksDB store, every update to the output topic.
 *
 * <p>Arguments: bootstrap input output application.id state.dir num.stream.threads
 * num.standby.replicas [acceptable.recovery.lag [processing.guarantee]]. Runs until SIGTERM (the harness stops
 * it once the output is verified). It prints its state changes and its active tasks as they change
 * ("peers-state MS OLD NEW", "peers-tasks MS 0_1,0_3"; MS in epoch milliseconds) for the scale-out
 * figure (bench/peers/scaleout.py).
 */
public final class CountSum {
    private CountSum() {
    }

    public static void main(String[] args) throws InterruptedException {
        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[3]);
        props.put(StreamsConfig.STATE_DIR_CONFIG, args[4]);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, Integer.parseInt(args[5]));
        props.put(StreamsConfig.NUM_STANDBY_REPLICAS_CONFIG, Integer.parseInt(args[6]));
        // Output at each commit (the record cache flushes then): often enough to time the output.
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        props.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
        props.put(StreamsConfig.consumerPrefix("session.timeout.ms"), 10_000);
        props.put(StreamsConfig.consumerPrefix("heartbeat.interval.ms"), 500);
        if (args.length > 7) {
            props.put(StreamsConfig.ACCEPTABLE_RECOVERY_LAG_CONFIG, Long.parseLong(args[7]));
        }
        if (args.length > 8) {
            props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, args[8]);
        }

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(args[1], Consumed.with(Serdes.String(), Serdes.String()))
            .groupByKey()
            .aggregate(() -> "0,0", (key, amount, agg) -> {
                int comma = agg.indexOf(',');
                long count = Long.parseLong(agg, 0, comma, 10) + 1;
                long sum = Long.parseLong(agg, comma + 1, agg.length(), 10) + Long.parseLong(amount);
                return count + "," + sum;
            }, Materialized.<String, String, org.apache.kafka.streams.state.KeyValueStore<org.apache.kafka.common.utils.Bytes, byte[]>>as("count-sum")
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()))
            .toStream()
            .to(args[2], Produced.with(Serdes.String(), Serdes.String()));

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close();
            stopped.countDown();
        }));
        streams.setStateListener((now, before) ->
            System.out.println("peers-state " + System.currentTimeMillis() + " " + before + " " + now));
        streams.start();
        Thread tasks = new Thread(() -> printTasks(streams), "peers-tasks");
        tasks.setDaemon(true);
        tasks.start();
        stopped.await();
    }

    /** Its active tasks, printed whenever they change (polled every 20 ms while it runs). */
    private static void printTasks(KafkaStreams streams) {
        String last = null;
        while (true) {
            try {
                TreeSet<String> active = new TreeSet<>();
                for (ThreadMetadata thread : streams.metadataForLocalThreads()) {
                    for (TaskMetadata task : thread.activeTasks()) {
                        active.add(task.taskId().toString());
                    }
                }
                String now = String.join(",", active);
                if (!now.equals(last)) {
                    System.out.println("peers-tasks " + System.currentTimeMillis() + " " + now);
                    last = now;
                }
                Thread.sleep(20);
            } catch (IllegalStateException notRunning) {
                // not running or rebalancing yet (or any more): nothing to print
                try {
                    Thread.sleep(20);
                } catch (InterruptedException e) {
                    return;
                }
            } catch (InterruptedException e) {
                return;
            }
        }
    }
}
