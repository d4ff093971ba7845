import java.util.ArrayList;
import java.util.List;

/**
 * One thread ("oom") keeps 1 MiB arrays until the heap is exhausted.  Run with
 * -XX:+ExitOnOutOfMemoryError, the JVM then exits at once (status 3) from the
 * failed allocation, without a safepoint: a tracer must have that slow path
 * all the same.  Prints "oom tid T" first.
 */
public class OutOfMemory {
    public static void main(String[] args) throws Exception {
        TestSupport.awaitGo();
        Thread t = new Thread(() -> {
            try {
                System.out.println("oom tid " + TestSupport.kernelTid());
                System.out.flush();
                List<long[]> keep = new ArrayList<>();
                while (true) {
                    keep.add(new long[128 * 1024]);
                }
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        }, "oom");
        t.start();
        t.join();
    }
}
