/** Allocates N (arg 0, default 3) long[] arrays of LEN elements (arg 1,
 *  default 1 Mi): far beyond any TLAB, so each takes the slow path outside the
 *  TLAB with an exact, known byte size: 16-byte header + 8 * LEN. */
public class BigArrays {
    static volatile Object sink;

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 3;
        int len = args.length > 1 ? Integer.parseInt(args[1]) : 1 << 20;
        TestSupport.awaitGo();
        System.out.println("worker tid " + TestSupport.kernelTid());
        long sum = 0;
        for (int i = 0; i < n; i++) {
            long[] a = new long[len];
            a[len - 1] = i;
            sink = a;
            sum += a.length;
        }
        System.out.println("allocated " + n + " long[" + len + "] total elements " + sum);
    }
}
