/**
 * Threads that live a moment: each named "short-NN", allocating a few
 * arrays (TLAB refills, a batch of slow paths flushed as it exits) and
 * gone before the next starts.  A tracer that names a thread only when it
 * gets to the thread's events finds it gone (docs/decisions.md, 119).
 *
 * args: THREADS (default 40)
 * Prints "ready PID", waits for "go" (TestSupport.awaitGo), runs the
 * threads one after another, prints "done THREADS", then waits for a line
 * on stdin before exiting, so a tracer can be held meanwhile.
 */
public class ShortThreads {
    static volatile Object sink;

    public static void main(String[] args) throws Exception {
        int threads = args.length > 0 ? Integer.parseInt(args[0]) : 40;
        TestSupport.awaitGo();
        for (int i = 0; i < threads; i++) {
            Thread t = new Thread(() -> {
                for (int j = 0; j < 64; j++) {
                    sink = new byte[16 * 1024];
                }
            }, String.format("short-%02d", i));
            t.start();
            t.join();
        }
        System.out.println("done " + threads);
        System.out.flush();
        new java.io.BufferedReader(new java.io.InputStreamReader(System.in)).readLine();
    }
}
