import java.util.concurrent.CountDownLatch;

/**
 * Allocation-heavy benchmark: THREADS threads each run ITERATIONS iterations of
 * small-object and small-array allocation with a rolling window of survivors
 * (young GCs copy through PLABs), after WARMUP iterations that are not timed.
 * Prints "elapsed_ms N" for the timed phase and a checksum.
 *
 * args: THREADS (2) ITERATIONS (20_000_000) WARMUP (5_000_000) [wait]
 */
public class AllocBench {
    static final class Node {
        final long v; final Node next;
        Node(long v, Node next) { this.v = v; this.next = next; }
    }

    static long run(int iterations, int seed) {
        // Every object escapes into a ring (no scalar replacement); each lives
        // for the next 64K iterations, so young GCs find survivors to copy.
        Object[] ring = new Object[65_536];
        long sum = 0;
        for (int i = 0; i < iterations; i++) {
            Node n = new Node(i ^ seed, new Node(i, null));
            int[] a = new int[(i & 31) + 1];
            a[0] = i;
            sum += n.v + n.next.v + a.length;
            ring[i & (ring.length - 1)] = ((i & 1) == 0) ? n : a;
            if ((i & 4095) == 0) ring[(i >>> 12) & (ring.length - 1)] = new long[512];
        }
        return sum + ring.length;
    }

    public static void main(String[] args) throws Exception {
        int threads = args.length > 0 ? Integer.parseInt(args[0]) : 2;
        int iterations = args.length > 1 ? Integer.parseInt(args[1]) : 20_000_000;
        int warmup = args.length > 2 ? Integer.parseInt(args[2]) : 5_000_000;
        if (args.length > 3 && args[3].equals("wait")) {
            TestSupport.awaitGo();   // "ready PID", then wait for a tracer (bench/overhead.py)
        }
        long[] sums = new long[threads];
        for (int phase = 0; phase < 2; phase++) {
            int n = phase == 0 ? warmup : iterations;
            CountDownLatch start = new CountDownLatch(1);
            Thread[] ts = new Thread[threads];
            for (int t = 0; t < threads; t++) {
                final int id = t;
                ts[t] = new Thread(() -> {
                    try { start.await(); } catch (InterruptedException e) { return; }
                    sums[id] += run(n, id);
                });
                ts[t].start();
            }
            long t0 = System.nanoTime();
            start.countDown();
            for (Thread t : ts) t.join();
            long ms = (System.nanoTime() - t0) / 1_000_000;
            if (phase == 1) System.out.println("elapsed_ms " + ms);
        }
        long total = 0;
        for (long s : sums) total += s;
        System.out.println("checksum " + total);
    }
}
