import java.lang.invoke.MethodHandles;
import java.util.ArrayList;
import java.util.List;
import java.util.function.IntFunction;

/**
 * Allocates from code whose metadata comes and goes, so that a tracer that
 * names Java frames from the VM's memory would name them wrongly if it
 * trusted a freed Method*: classes defined by throw-away class loaders
 * (unloaded by the next collections, their metaspace reused by the next
 * ones), hidden classes (Lookup.defineHiddenClass, one per round, dead
 * after it), lambdas, and (run with -javaagent: RedefineAgent) classes
 * redefined, whose old methods the VM frees.
 *
 * Each generated class Gen<N> (N the round) has a method alloc<N>() that
 * allocates; a frame named Gen<N>.alloc<M> with N != M would be a wrong
 * name.  The class files are made here, from a template with the numbers
 * patched in (GenXXXXXX.java; no compiler needed at run time).
 *
 * args: ROUNDS (default 200).  Prints "rounds N" and "checksum C".
 */
public class MetadataChurn {
    // The template (GenXXXXXX.java), as compiled beside this class.
    static final byte[] TEMPLATE;
    static {
        try (var in = MetadataChurn.class.getResourceAsStream("/GenXXXXXX.class")) {
            TEMPLATE = in.readAllBytes();
        } catch (java.io.IOException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    static byte[] classFile(int n) {
        byte[] t = TEMPLATE.clone();
        byte[] from = "XXXXXX".getBytes();
        byte[] to = String.format("%06d", n).getBytes();
        for (int i = 0; i + from.length <= t.length; i++) {
            boolean match = true;
            for (int k = 0; k < from.length && match; k++) match = t[i + k] == from[k];
            if (match) System.arraycopy(to, 0, t, i, to.length);
        }
        return t;
    }

    static final class Loader extends ClassLoader {
        Loader() { super(MetadataChurn.class.getClassLoader()); }
        Class<?> define(String name, byte[] b) { return defineClass(name, b, 0, b.length); }
    }

    public static void main(String[] args) throws Throwable {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 200;
        TestSupport.awaitGo();
        long checksum = 0;
        MethodHandles.Lookup lookup = MethodHandles.lookup();
        for (int r = 0; r < rounds; r++) {
            String name = String.format("Gen%06d", r);
            byte[] b = classFile(r);
            // A class of its own loader: unloaded once both are garbage.
            Class<?> c = new Loader().define(name, b);
            checksum += (long) c.getMethod("run", int.class).invoke(null, 2000);
            // A hidden class of the same bytes (its name gets a suffix).
            Class<?> h = lookup.defineHiddenClass(b, true).lookupClass();
            checksum += (long) h.getMethod("run", int.class).invoke(null, 2000);
            // Redefined with its own bytes (with -javaagent: RedefineAgent):
            // new methods, the old ones freed once no frame runs them.
            if (RedefineAgent.redefine(c, b)) {
                checksum += (long) c.getMethod("run", int.class).invoke(null, 2000);
            }
            // A lambda allocating.
            final int extra = r % 3;
            IntFunction<long[]> f = k -> new long[k + extra];
            for (int k = 0; k < 500; k++) checksum += f.apply(64).length;
            if (r % 20 == 19) System.gc();
        }
        System.out.println("rounds " + rounds);
        System.out.println("checksum " + checksum);
    }
}
