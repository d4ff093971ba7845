import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.List;

/**
 * Old objects dropped at a known moment, for which collection reports their
 * deaths (issue 34: each death attributed to the first collection that could
 * reclaim it).  keep() allocates 512 arrays of 64 KiB (32 MiB) and holds
 * them; two System.gc() calls make them old where there are generations;
 * then the list is dropped and, at once, one byte[MARK_BYTES] is allocated
 * (outside any TLAB: its slow path's timestamp marks the drop in a trace);
 * then CHURN_MB of garbage (young collections, and on the concurrent
 * collectors whatever cycles they start), then a last System.gc().
 * Prints "ready PID", waits for a line, does the above, prints "done" and
 * waits for a line (or EOF) before it exits.
 *
 * args: CHURN_MB (default 256)
 */
public class DropOld {
    static final int MARK_BYTES = 7_777_777;
    static List<byte[]> kept = new ArrayList<>();
    static Object mark;
    static long sink;

    static byte[] keep() { return new byte[64 * 1024]; }
    static byte[] churn() { return new byte[2048]; }

    public static void main(String[] args) throws Exception {
        long churnMb = args.length > 0 ? Long.parseLong(args[0]) : 256;
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        System.out.println("ready " + ProcessHandle.current().pid());
        System.out.flush();
        in.readLine();
        for (int i = 0; i < 512; i++) kept.add(keep());
        System.gc();
        System.gc();
        kept = null;
        mark = new byte[MARK_BYTES];
        for (long n = 0; n < (churnMb << 20) / 2048; n++) sink += churn().length;
        System.gc();
        System.out.println("done " + sink);
        System.out.flush();
        in.readLine();
    }
}
