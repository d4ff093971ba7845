import java.util.ArrayList;
import java.util.List;

/**
 * Every kind of stop-the-world pause in a few seconds, for the pause probes'
 * exact tests (the corpus of real programs covers the rest): a live set grown
 * to most of the heap while short-lived objects churn (G1 concurrent cycles
 * with Remark and Cleanup, Parallel and Serial full collections, Serial's
 * young collections given up as "promotion not safe"), humongous arrays (G1),
 * and explicit System.gc() calls, then the live set dropped and grown again;
 * and a thread dump each round (a safepoint that is no collection).
 *
 * Last, an old generation kept nearly full while a sliding window of objects
 * survives young collections: Serial then finds promotion "not safe", gives
 * its young collection up and collects the whole heap in the same safepoint.
 *
 * args: ROUNDS (default 3) MAX_LIVE_MB (default 40: with -Xmx64m, about 60%)
 * Prints "checksum N", which depends only on the arguments.
 */
public class PauseMix {
    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 3;
        int maxLiveMb = args.length > 1 ? Integer.parseInt(args[1]) : 40;
        TestSupport.awaitGo();
        long checksum = 0;
        for (int r = 0; r < rounds; r++) {
            // A safepoint that is no collection (VM_ThreadDump), every round.
            checksum += java.lang.management.ManagementFactory.getThreadMXBean()
                            .dumpAllThreads(true, true).length > 0 ? 1 : 0;
            List<byte[]> live = new ArrayList<>();
            long liveBytes = 0;
            int i = 0;
            while (liveBytes < (long) maxLiveMb << 20) {
                byte[] keep = new byte[16 * 1024 + (i % 7) * 512];
                keep[0] = (byte) i;
                live.add(keep);
                liveBytes += keep.length;
                for (int k = 0; k < 64; k++) {          // churn: dies young
                    byte[] tmp = new byte[64 + (k * 13 + i) % 512];
                    checksum += tmp.length;
                }
                if (i % 400 == 0) {                     // a humongous array under G1 (1 MiB regions)
                    long[] big = new long[(1 << 20) / 8 + 1];
                    big[0] = i;
                    checksum += big.length;
                }
                i++;
            }
            checksum += live.size();
            System.gc();
            live = null;
            System.gc();
        }
        // The nearly full old generation and the sliding window.
        List<byte[]> old = new ArrayList<>();
        for (int k = 0; k < (maxLiveMb - 4) * 64; k++) old.add(new byte[16 * 1024 - 16]);
        System.gc();
        byte[][] window = new byte[1536][];           // ~6 MiB that lives a while
        for (int k = 0; k < 60_000; k++) {
            window[k % window.length] = new byte[4096 - 16];
            for (int j = 0; j < 8; j++) checksum += new byte[200 + j].length;
        }
        checksum += old.size() + window.length;
        System.out.println("checksum " + checksum);
    }
}
