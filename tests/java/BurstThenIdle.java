/**
 * One thread ("burst") allocates ITERATIONS small arrays (thousands of TLAB
 * refills), prints "idle TID" and then stays alive, doing nothing, until
 * stdin closes.  What it did last is still in the VM's alloc__batch buffer for
 * that thread (fewer than 128 slow paths, from its last 100 ms): a batched
 * tracer that ends now has those only if it drains the VM (alloc__drain).
 *
 * args: ITERATIONS
 */
public class BurstThenIdle {
    public static void main(String[] args) throws Exception {
        int iterations = Integer.parseInt(args[0]);
        TestSupport.awaitGo();
        long[] sum = new long[1];
        Object[] keep = new Object[1024];  // the arrays escape: the JIT cannot drop them
        Thread t = new Thread(() -> {
            try {
                long tid = TestSupport.kernelTid();
                for (int i = 0; i < iterations; i++) {
                    byte[] b = new byte[64 + (i % 64)];
                    keep[i & 1023] = b;
                    sum[0] += b.length;
                }
                System.out.println("idle " + tid);
                System.out.flush();
                while (System.in.read() >= 0) { }
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        }, "burst");
        t.start();
        t.join();
        System.out.println("sum " + sum[0]);
    }
}
