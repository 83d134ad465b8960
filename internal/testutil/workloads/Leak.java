import java.util.ArrayList;
import java.util.List;

/**
 * A memory leak for JFR's Old Object Sample event: LeakedItem objects pile up in a static list (a
 * chain from a GC root: the class Leak, its static field LEAK, the ArrayList, its array, the item and
 * its payload), while short-lived garbage keeps the collector busy.
 *
 * <p>The sampler picks allocations that start a new TLAB or go outside one, in proportion to their
 * bytes, and reports at a dump the samples still alive. So the leaked items are big (an 8 KiB payload
 * next to 100 KiB of garbage per item: about one sample in thirteen is a leaked one) and live for
 * seconds: the list is trimmed by its older half past 4,000 items (32 MiB), so the heap never fills
 * with -Xmx64m, and the loop sleeps a millisecond per item (about 100 MB/s of allocation, a tenth of a
 * core).
 */
public class Leak {
    static final List<LeakedItem> LEAK = new ArrayList<>();
    static volatile long sink;

    public static void main(String[] args) throws Exception {
        System.out.println("ready");
        long n = 0;
        while (true) {
            for (int i = 0; i < 50; i++) {
                byte[] garbage = new byte[2048];
                sink += garbage.length;
            }
            LEAK.add(new LeakedItem(n++));
            if (LEAK.size() > 4_000) {
                LEAK.subList(0, 2_000).clear();
            }
            Thread.sleep(1);
        }
    }

    static final class LeakedItem {
        final long id;
        final byte[] payload = new byte[8192];

        LeakedItem(long id) {
            this.id = id;
        }
    }
}
