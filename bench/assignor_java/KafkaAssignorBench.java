// Runs Kafka Streams' own HighAvailabilityTaskAssignor (kafka-streams 4.1.1) on problems written by
// bench/assignor.py and bench/assignor_quality.py, so both assignors see the same input in the same run.
//
// Protocol: one JVM serves many problems. Each stdin line is "<problem file> <result file>"; the
// harness answers on stdout with "done <median ms> <runs> <min ms> <probing> <min cpu ms>" after
// writing the assignment (<probing>: the assignor asked for a probing rebalance; <min cpu ms>: the
// least CPU time of the timing thread over the measured runs, which a busy machine disturbs less
// than wall time; GC and JIT threads' time is not in it).
//
// Problem file lines: "configs <standbys> <acceptable lag> <max warm-ups> <probing ms> [tag key ...]",
// "iterations <warm-up runs> <measured runs> <max seconds>", "task <id> <end offset sum>" (stateful),
// "stateless <id>", then per client "client <process id> <capacity> [key=value ...]" (client tags)
// followed by its "active", "standby" and "offsets <id>:<offset sum> ..." lines.
// Timed, like our assign() which starts from offset sums: what StreamsPartitionAssignor does for the
// assignor's input (a ClientState per client, its offset sums, ClientState.initializePrevTasks and
// computeTaskLags against the changelog end offsets) and then HighAvailabilityTaskAssignor.assign().
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;

import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.assignment.AssignmentConfigs;
import org.apache.kafka.streams.processor.assignment.ProcessId;
import org.apache.kafka.streams.processor.internals.assignment.ClientState;
import org.apache.kafka.streams.processor.internals.assignment.HighAvailabilityTaskAssignor;
import org.apache.kafka.streams.processor.internals.assignment.RackAwareTaskAssignor;

public final class KafkaAssignorBench {
    static final double SLOW_MS = 10_000;

    /** Rack-aware optimisation off, as in a deployment without rack information. */
    static final class NoRacks extends RackAwareTaskAssignor {
        NoRacks(AssignmentConfigs configs) {
            super(Cluster.empty(), Collections.emptyMap(), Collections.emptyMap(), Collections.emptyMap(),
                  Collections.emptyMap(), null, configs, Time.SYSTEM);
        }

        @Override
        public synchronized boolean canEnableRackAwareAssignor() {
            return false;
        }

        @Override
        public boolean validClientRack() {
            return false;
        }
    }

    static final class Client {
        ProcessId id;
        int capacity;
        Map<String, String> tags = new HashMap<>();
        Set<TaskId> active = new HashSet<>();
        Set<TaskId> standby = new HashSet<>();
        Map<TaskId, Long> offsets = new HashMap<>();
    }

    static final class Problem {
        AssignmentConfigs configs;
        int warmup;
        int measure;
        double maxSeconds;
        List<TaskId> tasks = new ArrayList<>();
        Set<TaskId> stateful = new TreeSet<>();
        Map<TaskId, Long> end = new HashMap<>();
        List<Client> clients = new ArrayList<>();
    }

    static TaskId task(String s) {
        int i = s.indexOf('_');
        return new TaskId(Integer.parseInt(s.substring(0, i)), Integer.parseInt(s.substring(i + 1)));
    }

    static Problem read(Path path) throws IOException {
        Problem p = new Problem();
        Client current = null;
        for (String line : Files.readAllLines(path)) {
            String[] f = line.trim().split("\\s+");
            switch (f[0]) {
                case "configs":
                    List<String> tagKeys = new ArrayList<>();
                    for (int i = 5; i < f.length; i++) tagKeys.add(f[i]);
                    p.configs = new AssignmentConfigs(Long.parseLong(f[2]), Integer.parseInt(f[3]),
                        Integer.parseInt(f[1]), Long.parseLong(f[4]), tagKeys);
                    break;
                case "iterations":
                    p.warmup = Integer.parseInt(f[1]);
                    p.measure = Integer.parseInt(f[2]);
                    p.maxSeconds = Double.parseDouble(f[3]);
                    break;
                case "task":
                    TaskId t = task(f[1]);
                    p.tasks.add(t);
                    p.stateful.add(t);
                    p.end.put(t, Long.parseLong(f[2]));
                    break;
                case "stateless":
                    p.tasks.add(task(f[1]));
                    break;
                case "client":
                    current = new Client();
                    current.id = new ProcessId(UUID.fromString(f[1]));
                    current.capacity = Integer.parseInt(f[2]);
                    for (int i = 3; i < f.length; i++) {
                        String[] kv = f[i].split("=", 2);
                        current.tags.put(kv[0], kv[1]);
                    }
                    p.clients.add(current);
                    break;
                case "active":
                    for (int i = 1; i < f.length; i++) current.active.add(task(f[i]));
                    break;
                case "standby":
                    for (int i = 1; i < f.length; i++) current.standby.add(task(f[i]));
                    break;
                case "offsets":
                    for (int i = 1; i < f.length; i++) {
                        String[] kv = f[i].split(":");
                        current.offsets.put(task(kv[0]), Long.parseLong(kv[1]));
                    }
                    break;
                default:
                    break;
            }
        }
        return p;
    }

    /** Kafka's own path from subscription data to the assignor's input. */
    static Map<ProcessId, ClientState> states(Problem p) {
        Map<ProcessId, ClientState> states = new TreeMap<>();
        for (Client c : p.clients) {
            ClientState state = new ClientState(c.id, c.tags);
            for (int i = 0; i < c.capacity; i++) state.incrementCapacity();
            Map<TaskId, Long> sums = new HashMap<>(c.offsets);
            for (TaskId t : c.active) sums.put(t, -2L);  // Task.LATEST_OFFSET: running active
            state.addPreviousTasksAndOffsetSums("consumer-1", sums);
            state.initializePrevTasks(Collections.emptyMap(), false);
            state.computeTaskLags(c.id, p.end);
            states.put(c.id, state);
        }
        return states;
    }

    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.trim().split("\\s+");
            if (f.length < 2) continue;
            Problem p = read(Path.of(f[0]));
            Set<TaskId> all = new TreeSet<>(p.tasks);
            NoRacks racks = new NoRacks(p.configs);
            List<Double> times = new ArrayList<>();
            double minCpu = Double.MAX_VALUE;
            ThreadMXBean cpu = ManagementFactory.getThreadMXBean();
            Map<ProcessId, ClientState> last = null;
            boolean probing = false;
            double spent = 0;
            int total = p.warmup + p.measure;
            for (int i = 0; i < total; i++) {
                long t0 = System.nanoTime();
                long c0 = cpu.getCurrentThreadCpuTime();
                Map<ProcessId, ClientState> s = states(p);
                probing = new HighAvailabilityTaskAssignor().assign(s, all, p.stateful, racks, p.configs);
                double ms = (System.nanoTime() - t0) / 1e6;
                double cpuMs = (cpu.getCurrentThreadCpuTime() - c0) / 1e6;
                spent += ms / 1000.0;
                last = s;
                if (i >= p.warmup) {
                    times.add(ms);
                    minCpu = Math.min(minCpu, cpuMs);
                }
                // A run this slow is dominated by the algorithm, not by the JIT: it is the measurement.
                if (ms > SLOW_MS) {
                    if (times.isEmpty()) {
                        times.add(ms);
                        minCpu = cpuMs;
                    }
                    break;
                }
                // Otherwise stop warming up once the time budget is spent (at least one timed run).
                if (spent > p.maxSeconds && !times.isEmpty()) break;
                if (spent > p.maxSeconds && i < p.warmup) {
                    i = p.warmup - 1;
                }
            }
            try (PrintWriter out = new PrintWriter(Files.newBufferedWriter(Path.of(f[1])))) {
                for (Map.Entry<ProcessId, ClientState> e : last.entrySet()) {
                    out.println("client " + e.getKey().id());
                    out.println("active " + String.join(" ", names(e.getValue().activeTasks())));
                    out.println("standby " + String.join(" ", names(e.getValue().standbyTasks())));
                }
            }
            Collections.sort(times);
            System.out.println("done " + times.get(times.size() / 2) + " " + times.size() + " " + times.get(0)
                + " " + probing + " " + minCpu);
            System.out.flush();
        }
    }

    static List<String> names(Set<TaskId> tasks) {
        List<String> out = new ArrayList<>();
        for (TaskId t : new TreeSet<>(tasks)) out.add(t.subtopology() + "_" + t.partition());
        return out;
    }
}
