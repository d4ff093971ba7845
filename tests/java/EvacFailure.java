import java.util.ArrayList;
import java.util.List;

/**
 * G1 runs out of space while it copies (an evacuation failure, "To-space
 * exhausted" on 17, "(Evacuation Failure)" from 21 on): a young live set
 * grown to nearly the whole heap, every object still young when the pause
 * comes.  With -XX:ObjectAlignmentInBytes=16 G1 keeps no alignment reserve
 * at the end of a PLAB, so a PLAB can be filled to its very end just as its
 * refill fails: the case where the probes once reported one PLAB's
 * retirement again and again.
 *
 * args: ROUNDS (default 3).  Run with a small heap (-Xmx64m).  Prints
 * "rounds N" and "checksum C", which depend only on ROUNDS.
 */
public class EvacFailure {
    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 3;
        TestSupport.awaitGo();
        long checksum = 0;
        long max = Runtime.getRuntime().maxMemory();
        for (int r = 0; r < rounds; r++) {
            List<Object[]> live = new ArrayList<>();
            long bytes = 0;
            try {
                // Small objects in chains: each young pause must copy all of
                // them (nothing dies), until to-space runs out.
                while (bytes < max * 9 / 10) {
                    Object[] node = new Object[14];
                    for (int k = 0; k < node.length; k++) node[k] = new int[6 + k % 5];
                    live.add(node);
                    bytes += 16 + 14 * 8 + 14 * 48;
                }
            } catch (OutOfMemoryError e) {
                // The heap is full: what the round was for.
            }
            checksum += live.size() > 0 ? 1 : 0;
            live = null;
            System.gc();
        }
        System.out.println("rounds " + rounds);
        System.out.println("checksum " + checksum);
    }
}
