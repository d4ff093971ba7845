import java.io.BufferedReader;
import java.io.InputStreamReader;

/**
 * A known live heap for `stat --live` (tests/test_stat_live.py): after "go"
 * it keeps KEEP_MB MiB in 64 KiB arrays (each 65,536 + 16 bytes of header)
 * held by one array made first, allocates CHURN_MB MiB of 64 KiB arrays that
 * die at once, asks for a full collection (System.gc(): on every collector
 * one that sees every death, young and old), then allocates YOUNG_MB MiB
 * more garbage that no collection has judged, and prints "done".  It waits
 * for a line before it exits, so a tracer can read the JVM while it lives.
 * Nothing after "go" concatenates strings (no invokedynamic, no classes
 * loaded): the objects it keeps alive are the holder and the arrays.
 *
 * args: KEEP_MB (default 32) CHURN_MB (default 64) YOUNG_MB (default 4)
 */
public class LiveKeep {
    static byte[][] kept;
    static long sink;

    static byte[] keep() { return new byte[64 * 1024]; }
    static byte[] churn() { return new byte[64 * 1024]; }

    public static void main(String[] args) throws Exception {
        int keepMb = args.length > 0 ? Integer.parseInt(args[0]) : 32;
        int churnMb = args.length > 1 ? Integer.parseInt(args[1]) : 64;
        int youngMb = args.length > 2 ? Integer.parseInt(args[2]) : 4;
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        System.out.println("ready " + ProcessHandle.current().pid());
        System.out.flush();
        in.readLine();
        kept = new byte[keepMb * 16][];
        for (int i = 0; i < kept.length; i++) kept[i] = keep();
        for (int i = 0; i < churnMb * 16; i++) {
            byte[] b = churn();
            b[0] = (byte) i;
            sink += b.length;
        }
        System.gc();
        for (int i = 0; i < youngMb * 16; i++) {
            byte[] b = churn();
            b[1] = (byte) i;
            sink += b.length;
        }
        System.out.print("kept_arrays ");
        System.out.println(kept.length);
        System.out.println("done");
        System.out.flush();
        in.readLine();
        sink += kept.length;
    }
}
