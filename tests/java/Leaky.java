import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.List;

/**
 * A service with one leak, for growing sites (issue 34): each allocation
 * site is a method of its own, so a tracer's sites name what it does.
 *  - parse(), format(): 3 to 7 arrays of 4,000 bytes and 2 to 6 of 2,000
 *    bytes a round (means; each size drawn from half to one and a half
 *    times its mean), dropped at once (churn: 70% of the bytes);
 *  - session(): 10,000-byte arrays held in a ring of 400, replaced every
 *    round (medium-lived: about 16 MB of allocation; 25% of the bytes);
 *  - cacheEntry(): 2,500-byte arrays replacing a random one of 1,600, one
 *    round in 4 (long-lived: they reach the old generation and die there;
 *    1.5%);
 *  - register(): 1,600-byte arrays added to a list that only grows
 *    (the leak: 3.98% of the bytes).
 * One round allocates 40,225 bytes on average and does WORK steps of arithmetic (a
 * service's work between its allocations: at the default, about 0.5 GB/s
 * of allocation here rather than the 7 GB/s of allocation alone, so a
 * leak is not gigabytes by the time a sampler has seen it).  The program
 * runs in units of UNIT_MB
 * MiB of allocation and, with GC=1, ends each unit with System.gc() (a full
 * collection or a whole cycle on every collector), printing "unit N";
 * after UNITS units (0: until a line or EOF arrives on stdin) it prints
 * "done" and waits for a line (or EOF) before it exits, so a tracer can
 * read the JVM while it lives.
 *
 * args: UNITS (default 0) UNIT_MB (default 128) GC (default 1) WORK (default 40000)
 */
public class Leaky {
    static final List<byte[]> registry = new ArrayList<>();
    static final byte[][] sessions = new byte[400][];
    static final byte[][] cache = new byte[1600][];
    static long sink, leaked;

    // (sizes drawn around their means: a program whose every round is the
    // same bytes in the same order puts the same object at every TLAB's
    // end, which a sampler triggered by TLAB refills would see alone:
    // docs/notes.md, session 22)
    static java.util.SplittableRandom random = new java.util.SplittableRandom(42);
    static int around(int mean) { return mean / 2 + random.nextInt(mean + 1); }
    static byte[] parse() { return new byte[around(4000)]; }
    static byte[] format() { return new byte[around(2000)]; }
    static byte[] session() { return new byte[around(10000)]; }
    static byte[] cacheEntry() { return new byte[around(2500)]; }
    static byte[] register() { return new byte[around(1600)]; }

    static final long ROUND_BYTES = 5 * 4000 + 4 * 2000 + 10000 + 2500 / 4 + 1600;

    public static void main(String[] args) throws Exception {
        int units = args.length > 0 ? Integer.parseInt(args[0]) : 0;
        long unitBytes = (args.length > 1 ? Long.parseLong(args[1]) : 128) << 20;
        boolean gc = args.length <= 2 || !args[2].equals("0");
        int work = args.length > 3 ? Integer.parseInt(args[3]) : 40_000;
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        System.out.println("ready " + ProcessHandle.current().pid());
        System.out.flush();
        in.readLine();
        Thread stop = new Thread(() -> {
            try { in.readLine(); } catch (Exception e) { }
        }, "stop-reader");
        stop.setDaemon(true);
        if (units == 0) stop.start();  // (else it runs its units whatever stdin holds)
        long round = 0;
        for (int unit = 1; units == 0 ? stop.isAlive() : unit <= units; unit++) {
            for (long end = round + unitBytes / ROUND_BYTES; round < end; round++) {
                for (int i = 3 + random.nextInt(5); i-- > 0;) sink += parse()[(int) (round % 2000)];
                for (int i = 2 + random.nextInt(5); i-- > 0;) sink += format()[(int) (round % 1000)];
                sessions[(int) (round % sessions.length)] = session();
                if (random.nextInt(4) == 0) cache[random.nextInt(cache.length)] = cacheEntry();
                byte[] leak = register();
                leaked += leak.length;
                registry.add(leak);
                long x = round | 1;
                for (int i = 0; i < work; i++) {
                    x ^= x << 13;
                    x ^= x >>> 7;
                    x ^= x << 17;
                }
                sink += x & 1;
            }
            if (gc) System.gc();
            System.out.println("unit " + unit + " leaked_bytes " + leaked);
            System.out.flush();
        }
        System.out.println("done rounds " + round + " leaked_bytes " + leaked + " sink " + sink);
        System.out.flush();
        if (units != 0) in.readLine();
    }
}
