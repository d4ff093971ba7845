/**
 * Threads started at one moment that allocate alike (issue 35, item 2: the sampler's seeds).
 * THREADS threads named "seed-NN" are created and spin, allocating nothing, until one volatile
 * store releases them all; each then allocates BYTES bytes of 64-byte arrays (no object kept)
 * and ends.  Their first allocation is each thread's first slow path, where the VM draws its
 * first sampling countdown: so every countdown is drawn within the moment of the release.
 *
 * args: THREADS (16) BYTES (4194304)
 * Prints "ready PID", waits for "go" (TestSupport.awaitGo), runs, prints "done THREADS".
 */
public class StartTogether {
    static volatile boolean released;
    static volatile Object sink;

    public static void main(String[] args) throws Exception {
        int threads = args.length > 0 ? Integer.parseInt(args[0]) : 16;
        long bytes = args.length > 1 ? Long.parseLong(args[1]) : 4L << 20;
        TestSupport.awaitGo();
        Thread[] ts = new Thread[threads];
        for (int i = 0; i < threads; i++) {
            ts[i] = new Thread(() -> {
                while (!released) Thread.yield();
                // A 64-byte array is 80 bytes with its header.
                for (long n = bytes / 80; n > 0; n--) {
                    sink = new byte[64];
                }
            }, String.format("seed-%02d", i));
            ts[i].start();
        }
        released = true;
        for (Thread t : ts) t.join();
        System.out.println("done " + threads);
        System.out.flush();
    }
}
