import java.nio.file.Path;
import jdk.jfr.Recording;

/**
 * An allocation-heavy worker thread ("alloc-worker") with a known, deterministic
 * workload: small objects of a few classes, a rolling window of survivors (so
 * young GCs copy objects into PLABs), and some medium arrays.  While it runs, a
 * JFR recording (started before the worker, stopped after it) records the
 * allocation and promotion events jvmtrace is checked against.
 *
 * args: ITERATIONS (default 2_000_000; "forever": until killed) JFR_OUT (optional: no recording if absent or "-")
 *       hold (optional): afterwards print "done" and wait for a line on stdin before exiting,
 *       so a tracer attached to the JVM can be read while it still lives
 * Prints "worker tid T" and a checksum that depends only on ITERATIONS.
 */
public class AllocWorker {
    static final class Node {
        final long value;
        final Node next;
        Node(long value, Node next) { this.value = value; this.next = next; }
    }

    static long work(int iterations) {
        Object[] window = new Object[16_384];   // survivors: about 1 MB of live data
        long checksum = 0;
        for (int i = 0; i < iterations; i++) {
            Node n = new Node(i, null);
            n = new Node(i * 31L, n);
            byte[] b = new byte[(i % 64) + 1];
            b[0] = (byte) i;
            checksum += n.value + n.next.value + b.length;
            if ((i & 7) == 0) {
                window[(i >>> 3) % window.length] = (i % 1024 == 0) ? new long[512] : n;
            }
            if ((i & 0xffff) == 0) {
                checksum += new String("s" + i).length();
            }
        }
        for (Object o : window) {
            if (o instanceof Node) checksum ^= ((Node) o).value;
        }
        return checksum;
    }

    public static void main(String[] args) throws Exception {
        boolean forever = args.length > 0 && args[0].equals("forever");
        int iterations = forever ? 100_000_000 : args.length > 0 ? Integer.parseInt(args[0]) : 2_000_000;
        String jfrOut = args.length > 1 && !args[1].equals("-") ? args[1] : null;
        if (jfrOut != null) {
            // JFR's first start initialises JFR, allocating enough to cause
            // collections that JFR itself does not record: do it before "ready",
            // so the measured recording below sees every collection after "go".
            Recording warm = new Recording();
            warm.start();
            warm.stop();
            warm.close();
        }
        TestSupport.awaitGo();

        Recording rec = null;
        if (jfrOut != null) {
            rec = new Recording();
            for (String e : new String[] {"jdk.ObjectAllocationInNewTLAB", "jdk.ObjectAllocationOutsideTLAB",
                                          "jdk.PromoteObjectInNewPLAB", "jdk.PromoteObjectOutsidePLAB",
                                          "jdk.GarbageCollection"}) {
                rec.enable(e).withoutStackTrace();
            }
            // JFR's own sampled view of allocation, throttled as in JFR's
            // default settings (default.jfc: 150/s); jvmtrace calibrate
            // measures its bias against every TLAB refill.
            rec.enable("jdk.ObjectAllocationSample").with("throttle", "150/s").withoutStackTrace();
            rec.start();
        }
        long[] result = new long[2];
        Thread t = new Thread(() -> {
            try {
                result[1] = TestSupport.kernelTid();
                System.out.println("worker tid " + result[1]);
                System.out.flush();
                do {
                    result[0] = work(iterations);
                } while (forever);
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        }, "alloc-worker");
        t.start();
        t.join();
        if (rec != null) {
            // Leave eden empty while JFR still records: stopping and dumping a
            // recording allocates, and a collection it caused would come after
            // JFR stopped, seen by a tracer but not by JFR.
            System.gc();
            rec.stop();
            rec.dump(Path.of(jfrOut));
            rec.close();
        }
        System.out.println("checksum " + result[0]);
        if (args.length > 2 && args[2].equals("hold")) {
            System.out.println("done");
            System.out.flush();
            new java.io.BufferedReader(new java.io.InputStreamReader(System.in)).readLine();
        }
    }
}
