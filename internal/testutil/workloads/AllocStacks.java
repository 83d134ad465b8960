/**
 * AllocStacks allocates each class from a method of its own, for allocation stack tests: per round,
 * {@code allocSmall} allocates 4 {@code Small}, {@code allocLarge} 1 {@code Large} (through
 * {@code viaHelper}), and {@code allocArrays} 1 {@code long[8]}; the last few of each are kept alive so
 * that escape analysis cannot remove them.
 *
 * <p>Usage: {@code AllocStacks [threads [warm-up ms]]} (default 1 thread, 1000 ms). The threads are named
 * "jvmkit-allocstacks-N". After the warm-up it prints "ready".
 */
public class AllocStacks {
    static final class Small {
        long a;
        Small(long a) { this.a = a; }
    }

    static final class Large {
        long a, b, c, d, e, f, g, h;
        Large(long a) { this.a = a; this.h = ~a; }
    }

    static final Object[] sink = new Object[256];

    static void allocSmall(int i) {
        for (int k = 0; k < 4; k++) {
            sink[(i + k) & 63] = new Small(i + k);
        }
    }

    static void allocLarge(int i) {
        sink[64 + (i & 63)] = new Large(i);
    }

    static void viaHelper(int i) {
        allocLarge(i);
    }

    static void allocArrays(int i) {
        sink[128 + (i & 63)] = new long[8];
    }

    static void round(int i) {
        allocSmall(i);
        viaHelper(i);
        allocArrays(i);
    }

    static void loop() {
        int i = 0;
        while (true) {
            round(i++);
        }
    }

    public static void main(String[] args) throws InterruptedException {
        int threads = args.length > 0 ? Integer.parseInt(args[0]) : 1;
        long warmup = args.length > 1 ? Long.parseLong(args[1]) : 1000;
        for (int t = 0; t < threads; t++) {
            Thread th = new Thread(AllocStacks::loop, "jvmkit-allocstacks-" + t);
            th.setDaemon(true);
            th.start();
        }
        Thread.sleep(warmup);
        System.out.println("ready");
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
    }
}
