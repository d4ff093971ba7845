import java.io.OutputStream;
import java.util.zip.CRC32;

/**
 * A program started by `jvmtrace stat|record -- COMMAND` (tests/test_launch.py).
 * Its stdout depends only on its arguments and its stdin: text lines, then every
 * byte value, then the length and CRC-32 of what it read; so a traced run's
 * stdout can be compared byte for byte with an untraced one.  On stderr it
 * prints its PID ("pid N"), which differs between runs.
 *
 * args: exit N  read stdin to its end, print, allocate a little, exit with status N
 *       wait    print "waiting" and block until a signal ends the JVM (stdin is not read)
 */
public class Launched {
    static final byte[][] sink = new byte[1024][];

    public static void main(String[] args) throws Exception {
        System.err.println("pid " + ProcessHandle.current().pid());
        System.err.flush();
        String mode = args.length > 0 ? args[0] : "exit";
        if (mode.equals("wait")) {
            System.out.println("waiting");
            System.out.flush();
            Thread.sleep(Long.MAX_VALUE);
            return;
        }
        int status = args.length > 1 ? Integer.parseInt(args[1]) : 0;
        byte[] in = System.in.readAllBytes();
        CRC32 crc = new CRC32();
        crc.update(in);
        OutputStream out = System.out;
        for (int i = 0; i < 1000; i++) {
            out.write(("line " + i + " \u00e9\u4e2d\n").getBytes("UTF-8"));
        }
        for (int b = 0; b < 256; b++) out.write(b);
        out.write(("\nstdin " + in.length + " bytes, crc32 " + Long.toHexString(crc.getValue()) + "\n").getBytes("UTF-8"));
        // About 110 MB that escape (the sink), so C2 cannot drop them and the
        // trace holds dozens of TLAB refills whatever size the heap gives a TLAB.
        long sum = 0;
        for (int i = 0; i < 1_000_000; i++) {
            byte[] b = new byte[64 + (i % 64)];
            sink[i & 1023] = b;
            sum += b.length;
        }
        out.write(("allocated " + sum + "\n").getBytes("UTF-8"));
        out.flush();
        System.exit(status);
    }
}
