import java.util.ArrayList;
import java.util.List;

/**
 * A memory leak for JFR's Old Object Sample event: LeakedItem objects pile up in a static list (a
 * chain from a GC root: the class Leak, its static field, the ArrayList, its array), while short-lived
 * garbage keeps the collector busy. The list is trimmed so the heap never fills.
 */
public class Leak {
    static final List<LeakedItem> LEAK = new ArrayList<>();
    static volatile long sink;

    public static void main(String[] args) throws Exception {
        System.out.println("ready");
        long n = 0;
        while (true) {
            for (int i = 0; i < 200; i++) {
                byte[] garbage = new byte[2048];
                sink += garbage.length;
            }
            LEAK.add(new LeakedItem(n++));
            if (LEAK.size() > 100_000) {
                LEAK.subList(0, 50_000).clear();
            }
            if (n % 100 == 0) {
                Thread.sleep(1);
            }
        }
    }

    static final class LeakedItem {
        final long id;
        final byte[] payload = new byte[128];

        LeakedItem(long id) {
            this.id = id;
        }
    }
}
