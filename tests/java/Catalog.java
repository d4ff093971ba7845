import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * A live heap of many classes, for checking a live-heap estimate against the
 * JVM's own class histogram (issue 34): a catalog of items, each an object
 * with a name (a String), tags (an int[]), a description (a byte[]), a price
 * (a Long: a box per item, outside the small-value cache) and a list of
 * reviews (an ArrayList of Review objects, each with its own String), kept
 * in a HashMap by id; while it builds it, it makes as many bytes of garbage
 * (request buffers, temporary strings).  Sizes are drawn, so the object at a
 * TLAB's end varies as in a real program.
 * Between items it does WORK steps of arithmetic (a service's work: at the
 * default the build takes seconds, so a sampler at a fixed rate a second
 * sees it as it would a real program's, not as one burst).
 * Prints "ready PID", waits for a line, builds ITEMS items (default 100,000:
 * about 100 MiB live), prints "built ..." and waits for a line (or EOF)
 * before it exits, so a test can inspect the JVM with all of it alive.
 *
 * args: ITEMS (default 100000) WORK (default 40000)
 */
public class Catalog {
    static final class Review {
        final String text;
        final int stars;
        Review(String text, int stars) { this.text = text; this.stars = stars; }
    }

    static final class Item {
        final long id;
        final String name;
        final int[] tags;
        final byte[] description;
        final Long price;
        final List<Review> reviews = new ArrayList<>();
        Item(long id, String name, int[] tags, byte[] description, Long price) {
            this.id = id; this.name = name; this.tags = tags; this.description = description; this.price = price;
        }
    }

    static final Map<Long, Item> catalog = new HashMap<>();
    static long sink;

    public static void main(String[] args) throws Exception {
        int items = args.length > 0 ? Integer.parseInt(args[0]) : 100_000;
        int work = args.length > 1 ? Integer.parseInt(args[1]) : 40_000;
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        System.out.println("ready " + ProcessHandle.current().pid());
        System.out.flush();
        in.readLine();
        SplittableRandom r = new SplittableRandom(7);
        for (int i = 0; i < items; i++) {
            String name = "item-" + i + "-" + Long.toHexString(r.nextLong());
            int[] tags = new int[4 + r.nextInt(40)];
            byte[] description = new byte[100 + r.nextInt(600)];
            Item item = new Item(i, name, tags, description, Long.valueOf(1_000_000L + r.nextInt(1 << 30)));
            for (int k = r.nextInt(5); k-- > 0;) {
                item.reviews.add(new Review("review " + k + " of " + name + " " + "*".repeat(r.nextInt(60)),
                                            1 + r.nextInt(5)));
            }
            catalog.put((long) i, item);
            // Garbage as much as what stays: a request buffer and a temporary string.
            byte[] request = new byte[200 + r.nextInt(1400)];
            sink += request.length + ("tmp " + i + name).length();
            long x = i | 1;
            for (int w = 0; w < work; w++) {
                x ^= x << 13;
                x ^= x >>> 7;
                x ^= x << 17;
            }
            sink += x & 1;
        }
        long tags = 0, descriptions = 0, reviews = 0;
        for (Item it : catalog.values()) {
            tags += it.tags.length;
            descriptions += it.description.length;
            reviews += it.reviews.size();
        }
        System.out.println("built items " + catalog.size() + " tags " + tags + " description_bytes " + descriptions
                + " reviews " + reviews + " sink " + sink);
        System.out.flush();
        in.readLine();
    }
}
