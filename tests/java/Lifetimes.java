import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.List;

/**
 * Objects of known lifetimes, each kind allocated by a method of its own, so
 * a tracer's sampled sites name the kind:
 *  - churn(): 1 KiB arrays dropped at once: dead at the next young collection;
 *  - keep(): 64 KiB arrays kept until the end: never die, and survive young
 *    collections into the old generation;
 *  - leak(): 16 KiB arrays added to a list that only grows (about 5% of the
 *    bytes allocated): live bytes grow at every collection;
 *  - medium(): 8 KiB arrays held in a ring of 512, each replaced after a few
 *    young collections.
 * Runs in rounds until a line (or EOF) arrives on stdin, then prints the
 * bytes each kind holds live and "done", and waits for another line before
 * it exits, so a tracer can read the JVM while it still lives.
 *
 * args: MAX_ROUNDS (default: until stdin says stop) KEEP_MB (default 32)
 */
public class Lifetimes {
    static final List<byte[]> kept = new ArrayList<>();
    static final List<byte[]> leaked = new ArrayList<>();
    static final byte[][] ring = new byte[512][];
    static long sink;

    static byte[] churn() { return new byte[1024]; }
    static byte[] keep() { return new byte[64 * 1024]; }
    static byte[] leak() { return new byte[16 * 1024]; }
    static byte[] medium() { return new byte[8 * 1024]; }

    public static void main(String[] args) throws Exception {
        long maxRounds = args.length > 0 ? Long.parseLong(args[0]) : Long.MAX_VALUE;
        int keepMb = args.length > 1 ? Integer.parseInt(args[1]) : 32;
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        // (TestSupport.awaitGo's handshake, on this one reader of stdin)
        System.out.println("ready " + ProcessHandle.current().pid());
        System.out.flush();
        in.readLine();
        Thread stop = new Thread(() -> {
            try { in.readLine(); } catch (Exception e) { }
        }, "stop-reader");
        stop.setDaemon(true);
        stop.start();
        for (int i = 0; i < keepMb * 16; i++) kept.add(keep());
        long round = 0;
        for (; round < maxRounds && stop.isAlive(); round++) {
            for (int i = 0; i < 2000; i++) {
                byte[] b = churn();
                b[0] = (byte) i;
                sink += b.length;
            }
            ring[(int) (round % ring.length)] = medium();
            if (round % 20 == 0) leaked.add(leak());
            if (leaked.size() > 4_000) leaked.subList(0, 2_000).clear();  // bounded: 64 MiB at most
        }
        long medium = 0;
        for (byte[] b : ring) if (b != null) medium += b.length;
        System.out.println("rounds " + round + " kept_bytes " + (long) kept.size() * 64 * 1024 + " leaked_bytes "
                + (long) leaked.size() * 16 * 1024 + " medium_bytes " + medium + " sink " + sink);
        System.out.println("done");
        System.out.flush();
        in.readLine();
    }
}
