/**
 * The template of MetadataChurn's generated classes: it copies this class
 * file with "XXXXXX" replaced by a round's number (class Gen000042 with
 * method alloc000042), and defines each copy in a class loader of its own.
 */
public class GenXXXXXX {
    static long allocXXXXXX(int n) {
        long s = 0;
        for (int i = 0; i < n; i++) {
            s += new int[4 + i % 5].length;
        }
        return s;
    }

    public static long run(int n) {
        return allocXXXXXX(n);
    }
}
