/** Calls System.gc() exactly N times (arg 0, default 5) and allocates almost
 *  nothing, so with a large enough heap these are the only collections. */
public class SystemGc {
    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 5;
        TestSupport.awaitGo();
        for (int i = 0; i < n; i++) {
            System.gc();
        }
        System.out.println("system.gc calls " + n);
    }
}
