import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;

import org.apache.kafka.clients.producer.internals.BuiltInPartitioner;
import org.apache.kafka.common.utils.Utils;

/** Reads lines "<hex key bytes> <partition count>" and prints "<murmur2> <partition>": Kafka's own
 *  Utils.murmur2 and the producer's BuiltInPartitioner.partitionForKey, for the Python tests. */
public class Murmur2Partitions {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        StringBuilder out = new StringBuilder();
        String line;
        while ((line = in.readLine()) != null) {
            String[] parts = line.split(" ");
            byte[] key = parts[0].equals("-") ? new byte[0] : HexFormat.of().parseHex(parts[0]);
            int partitions = Integer.parseInt(parts[1]);
            out.append(Utils.murmur2(key)).append(' ')
               .append(BuiltInPartitioner.partitionForKey(key, partitions)).append('\n');
        }
        System.out.print(out);
    }
}
