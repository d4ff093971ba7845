import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.concurrent.CountDownLatch;

/**
 * A server-like allocation benchmark (issue 35, item 1): THREADS workers, started together,
 * each serve REQUESTS "requests".  A request goes down one of 16 call paths about DEPTH
 * frames deep (a front half and a back half, each one of four families of three mutually
 * recursive methods, so the stacks share frames as a server's do) and, at the bottom, does
 * the allocations of its back family, of mixed sizes:
 *   parse   small objects: a StringBuilder's String, a list of 24-byte nodes
 *   json    a HashMap of boxed keys and short Strings (a few KB)
 *   buffer  a byte[] of 512 B to 16 KB
 *   blob    now and then a byte[] of 64 KB to 1 MB (outside TLABs when larger than one), else a
 *           long[128]
 * Every result is kept in a per-thread ring of 128 for a while (no scalar replacement; young
 * collections find survivors to copy), and a few of its bytes are read back.
 *
 * Fixed work, not fixed time, so that a tracer's cost shows in the JVM's CPU time.
 * Prints "allocated BYTES in MS ms: RATE MB/s ..." at the end, the bytes summed over the
 * workers' own getCurrentThreadAllocatedBytes (the VM's exact per-thread count, which JFR
 * reads too).
 *
 * args: THREADS (8) REQUESTS (200000) DEPTH (60) [wait]
 *   wait: print "ready PID" and block until a line on stdin (TestSupport.awaitGo)
 */
public class ServerBench {
    static final class Node {
        final long v; Node next;
        Node(long v, Node next) { this.v = v; this.next = next; }
    }

    static final class Req {
        final int front, back, half;
        final long seed;
        Req(int front, int back, int half, long seed) {
            this.front = front; this.back = back; this.half = half; this.seed = seed;
        }
    }

    // Per thread: the ring of recent results (the request's "live set").
    static final ThreadLocal<Object[]> RING = ThreadLocal.withInitial(() -> new Object[128]);

    // The four families, three methods each, each calling the next one down.
    static long next(Req r, int d) {
        if (d <= 0) return leaf(r);
        switch (d > r.half ? r.front : r.back) {
            case 0: return http1(r, d - 1);
            case 1: return json1(r, d - 1);
            case 2: return db1(r, d - 1);
            default: return cache1(r, d - 1);
        }
    }
    static long http1(Req r, int d) { return http2(r, d - 1) + 1; }
    static long http2(Req r, int d) { return http3(r, d - 1) ^ 2; }
    static long http3(Req r, int d) { return next(r, d - 1) + 3; }
    static long json1(Req r, int d) { return json2(r, d - 1) + 5; }
    static long json2(Req r, int d) { return json3(r, d - 1) ^ 7; }
    static long json3(Req r, int d) { return next(r, d - 1) + 11; }
    static long db1(Req r, int d) { return db2(r, d - 1) + 13; }
    static long db2(Req r, int d) { return db3(r, d - 1) ^ 17; }
    static long db3(Req r, int d) { return next(r, d - 1) + 19; }
    static long cache1(Req r, int d) { return cache2(r, d - 1) + 23; }
    static long cache2(Req r, int d) { return cache3(r, d - 1) ^ 29; }
    static long cache3(Req r, int d) { return next(r, d - 1) + 31; }

    static long leaf(Req r) {
        switch (r.back) {
            case 0: return parse(r.seed);
            case 1: return json(r.seed);
            case 2: return buffer(r.seed);
            default: return blob(r.seed);
        }
    }

    static long keep(long seed, Object o, long v) {
        Object[] ring = RING.get();
        ring[(int) (seed & (ring.length - 1))] = o;
        return v;
    }

    static long parse(long seed) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 8; i++) sb.append(seed + i).append(',');
        String s = sb.toString();
        Node head = null;
        for (int i = 0; i < 48; i++) head = new Node(seed ^ i, head);
        ArrayList<Object> out = new ArrayList<>();
        out.add(s);
        out.add(head);
        return keep(seed, out, s.length() + head.v);
    }

    static long json(long seed) {
        HashMap<Integer, String> m = new HashMap<>();
        for (int i = 0; i < 24; i++) m.put((int) (seed + i * 1000), "v" + (seed + i));
        return keep(seed, m, m.size());
    }

    static long buffer(long seed) {
        byte[] b = new byte[512 + (int) ((seed >>> 8) & 16383)];
        b[0] = (byte) seed;
        b[b.length - 1] = (byte) (seed >>> 3);
        return keep(seed, b, b.length + b[0]);
    }

    static long blob(long seed) {
        if (((seed >>> 16) & 63) == 0) {
            byte[] big = new byte[65536 + (int) ((seed >>> 24) & 0xfffff) % (1 << 20)];
            big[big.length - 1] = 1;
            return keep(seed, big, big.length);
        }
        long[] a = new long[128];
        a[127] = seed;
        return keep(seed, a, a[127]);
    }

    static long serve(int requests, int depth, int id, long[] allocated) {
        com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        long before = mx.getCurrentThreadAllocatedBytes();
        long x = 0x9E3779B97F4A7C15L * (id + 1), sum = 0;
        for (int i = 0; i < requests; i++) {
            x ^= x << 13; x ^= x >>> 7; x ^= x << 17;  // xorshift64
            int path = (int) (x >>> 60);  // 16 paths
            Req r = new Req(path & 3, path >>> 2, depth / 2, x);
            sum += next(r, depth);
        }
        allocated[id] = mx.getCurrentThreadAllocatedBytes() - before;
        return sum;
    }

    public static void main(String[] args) throws Exception {
        int threads = args.length > 0 ? Integer.parseInt(args[0]) : 8;
        int requests = args.length > 1 ? Integer.parseInt(args[1]) : 200_000;
        int depth = args.length > 2 ? Integer.parseInt(args[2]) : 60;
        if (args.length > 3 && args[3].equals("wait")) {
            TestSupport.awaitGo();
        }
        long[] sums = new long[threads];
        long[] allocated = new long[threads];
        CountDownLatch start = new CountDownLatch(1);
        Thread[] ts = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            final int id = t;
            ts[t] = new Thread(() -> {
                try { start.await(); } catch (InterruptedException e) { return; }
                sums[id] = serve(requests, depth, id, allocated);
            }, "worker-" + t);
            ts[t].start();
        }
        long t0 = System.nanoTime();
        start.countDown();
        for (Thread t : ts) t.join();
        long ns = System.nanoTime() - t0;
        long bytes = 0, total = 0;
        for (int t = 0; t < threads; t++) { bytes += allocated[t]; total += sums[t]; }
        System.out.printf("allocated %d in %d ms: %.0f MB/s (%d threads, %d requests each, depth %d)%n",
                          bytes, ns / 1_000_000, bytes / (ns / 1e9) / 1e6, threads, requests, depth);
        System.out.println("checksum " + total);
    }
}
