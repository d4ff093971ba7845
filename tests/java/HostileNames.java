/**
 * A program that names its allocating thread with terminal escape sequences
 * (a window-title write and a screen clear), as a hostile target could: the
 * name reaches jvmtrace through the kernel (comm) and the trace.
 * args: ITERATIONS (default 2_000_000)
 */
public class HostileNames {
    static final String NAME = "\u001b]0;pwned\u0007\u001b[2J";

    public static void main(String[] args) throws Exception {
        int iterations = args.length > 0 ? Integer.parseInt(args[0]) : 2_000_000;
        TestSupport.awaitGo();
        long[] sum = new long[1];
        Thread t = new Thread(() -> {
            for (int i = 0; i < iterations; i++) {
                byte[] b = new byte[64 + (i & 63)];
                sum[0] += b.length;
            }
        }, NAME);
        t.start();
        t.join();
        System.out.println("sum " + sum[0]);
    }
}
