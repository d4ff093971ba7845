import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.file.Path;
import jdk.jfr.Recording;

/**
 * A JVM that is already working when a tracer attaches: JFR records from the
 * start, a "steady-worker" thread runs AllocWorker's workload in rounds from
 * the start until told to stop, and the test drives the rest on stdin:
 *   "window": a "window-worker" thread runs AllocWorker.work(WINDOW_ITERATIONS),
 *             then calls System.gc() twice, and ends; prints "window done"
 *   "next":   waits for the steady worker to finish a round, allocates a long[65536 + N]
 *             (outside any TLAB) and prints "round N mark_ns T" (T: the wall clock just after)
 *   "end":    lets the steady worker finish two more rounds, stops it, stops
 *             JFR (writing JFR_OUT) and exits
 * Prints "steady tid T", then "working" once the steady worker finished its
 * first round, "window tid W" for the window's thread.
 *
 * args: JFR_OUT WINDOW_ITERATIONS
 */
public class MidRun {
    static volatile boolean stop;
    static long rounds;  // guarded by MidRun.class
    static final java.util.List<long[]> marks = new java.util.ArrayList<>();

    public static void main(String[] args) throws Exception {
        String jfrOut = args[0];
        int windowIterations = Integer.parseInt(args[1]);
        Recording rec = new Recording();
        for (String e : new String[] {"jdk.ObjectAllocationInNewTLAB", "jdk.ObjectAllocationOutsideTLAB",
                                      "jdk.PromoteObjectInNewPLAB", "jdk.PromoteObjectOutsidePLAB",
                                      "jdk.GarbageCollection"}) {
            rec.enable(e).withoutStackTrace();
        }
        rec.start();
        Thread steady = new Thread(() -> {
            try {
                System.out.println("steady tid " + TestSupport.kernelTid());
                System.out.flush();
                while (!stop) {
                    AllocWorker.work(200_000);
                    synchronized (MidRun.class) {
                        rounds++;
                        MidRun.class.notifyAll();
                    }
                    if (rounds == 1) {
                        System.out.println("working");
                        System.out.flush();
                    }
                }
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        }, "steady-worker");
        steady.start();

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null; ) {
            if (line.equals("window")) {
                Thread w = new Thread(() -> {
                    try {
                        System.out.println("window tid " + TestSupport.kernelTid());
                        System.out.flush();
                        AllocWorker.work(windowIterations);
                        System.gc();
                        System.gc();
                    } catch (Exception e) {
                        throw new RuntimeException(e);
                    }
                }, "window-worker");
                w.start();
                w.join();
                System.out.println("window done");
                System.out.flush();
            } else if (line.equals("next")) {
                synchronized (MidRun.class) {
                    long target = rounds + 1;
                    while (rounds < target) {
                        MidRun.class.wait();
                    }
                    // A mark in both records: an array too big for any TLAB
                    // (outside-TLAB, its size the round's number), and the
                    // wall clock right after it, to set JFR's stamps against.
                    marks.add(new long[(1 << 16) + (int) rounds]);
                    java.time.Instant now = java.time.Instant.now();
                    System.out.println("round " + rounds + " mark_ns " + (now.getEpochSecond() * 1_000_000_000L + now.getNano()));
                    System.out.flush();
                }
            } else if (line.equals("end")) {
                synchronized (MidRun.class) {
                    long target = rounds + 2;
                    while (rounds < target) {
                        MidRun.class.wait();
                    }
                    stop = true;
                }
                steady.join();
                rec.stop();
                rec.dump(Path.of(jfrOut));
                rec.close();
                synchronized (MidRun.class) {
                    System.out.println("rounds " + rounds);
                }
                return;
            }
        }
    }
}
