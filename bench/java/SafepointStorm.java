import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * Many threads that allocate all the time, and safepoints that are no
 * collection: the main thread asks for a thread dump (VM_ThreadDump, a
 * safepoint) every 100 ms.  bench/safepoint_cost.py reads the safepoints'
 * figures from -Xlog:safepoint, with and without a tracer's batched probes
 * attached (whose records the VM once flushed at every safepoint).
 *
 * args: THREADS (default 500) SECONDS (default 10)
 */
public class SafepointStorm {
    static volatile boolean stop;
    static volatile long sink;

    public static void main(String[] args) throws Exception {
        int threads = args.length > 0 ? Integer.parseInt(args[0]) : 500;
        int seconds = args.length > 1 ? Integer.parseInt(args[1]) : 10;
        for (int t = 0; t < threads; t++) {
            Thread th = new Thread(() -> {
                long s = 0;
                while (!stop) {
                    for (int i = 0; i < 1000; i++) {
                        s += new byte[32 + (i & 63)].length;  // a new TLAB every few hundred objects
                    }
                    Thread.yield();
                }
                sink += s;
            }, "storm-" + t);
            th.setDaemon(true);
            th.start();
        }
        System.out.println("ready " + ProcessHandle.current().pid());
        System.out.flush();
        System.in.read();  // the tracer is attached (or not): go
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long end = System.nanoTime() + seconds * 1_000_000_000L;
        int dumps = 0;
        while (System.nanoTime() < end) {
            Thread.sleep(100);
            dumps += mx.dumpAllThreads(false, false).length > 0 ? 1 : 0;
        }
        stop = true;
        System.out.println("dumps " + dumps);
    }
}
