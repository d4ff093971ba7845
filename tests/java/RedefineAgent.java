import java.lang.instrument.ClassDefinition;
import java.lang.instrument.Instrumentation;

/**
 * A Java agent (-javaagent:redefine.jar) for MetadataChurn's redefinition
 * rounds: it keeps the Instrumentation it is given, and redefines a class
 * with the same bytes on request, which makes the VM build new methods for
 * it and free the old ones once no frame runs them.  The jar is made by the
 * test (tests/test_allocation_sites.py: its manifest names this class).
 */
public final class RedefineAgent {
    static volatile Instrumentation inst;

    public static void premain(String args, Instrumentation i) {
        inst = i;
    }

    /** Redefines c with bytes; false if no agent was loaded. */
    public static boolean redefine(Class<?> c, byte[] bytes) throws Exception {
        if (inst == null) return false;
        inst.redefineClasses(new ClassDefinition(c, bytes));
        return true;
    }
}
