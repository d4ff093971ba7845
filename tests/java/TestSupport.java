import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.file.Files;
import java.nio.file.Path;

/** Shared by the jvmtrace test programs: the start handshake and thread ids. */
final class TestSupport {
    private TestSupport() {}

    /** Prints "ready PID" and blocks until a line arrives on stdin, so a tracer
     *  can attach before any measured work; with no stdin (EOF) it goes on. */
    static void awaitGo() throws Exception {
        System.out.println("ready " + ProcessHandle.current().pid());
        System.out.flush();
        new BufferedReader(new InputStreamReader(System.in)).readLine();
        // The moment measured work starts, on -Xlog's clock (JVM uptime), so
        // a test can ignore log lines from before the tracer was attached.
        System.out.println("go at uptime_ms " + java.lang.management.ManagementFactory.getRuntimeMXBean().getUptime());
        System.out.flush();
    }

    /** The kernel thread id of the calling thread (what BPF sees as tid). */
    static long kernelTid() throws Exception {
        // /proc/thread-self -> "<pid>/task/<tid>"
        Path p = Files.readSymbolicLink(Path.of("/proc/thread-self"));
        return Long.parseLong(p.getFileName().toString());
    }
}
