/**
 * Alloc allocates a known mix in a loop, for allocation profilers: per round, 8 {@code AllocA} (the most
 * objects and the most bytes), 2 {@code byte[40]} and 1 {@code AllocB}, and keeps the last few of each
 * alive so that escape analysis cannot remove them.
 *
 * <p>Usage: {@code Alloc [threads [warm-up ms]]} (default 1 thread, 1000 ms). The threads are named
 * "jvmkit-alloc-N". After the warm-up it prints "ready", then once a second "rounds N", the rounds all
 * threads completed in that second: the throughput an overhead benchmark compares.
 */
public class Alloc {
    static final class AllocA {
        long a, b;
        AllocA(long a) { this.a = a; this.b = a ^ 0x5DEECE66DL; }
    }

    static final class AllocB {
        int x;
        AllocB(int x) { this.x = x; }
    }

    // Sinks the JIT cannot see through: arrays whose slots are overwritten round-robin.
    static final Object[] sinkA = new Object[64];
    static final Object[] sinkBytes = new Object[64];
    static final Object[] sinkB = new Object[64];
    static final java.util.concurrent.atomic.LongAdder rounds = new java.util.concurrent.atomic.LongAdder();

    static void round(int i) {
        int slot = i & 63;
        for (int k = 0; k < 8; k++) {
            sinkA[(slot + k) & 63] = new AllocA(i + k);
        }
        sinkBytes[slot] = new byte[40];
        sinkBytes[(slot + 32) & 63] = new byte[40];
        sinkB[slot] = new AllocB(i);
    }

    static void loop() {
        int i = 0;
        while (true) {
            for (int n = 0; n < 1024; n++) {
                round(i++);
            }
            rounds.add(1024);
        }
    }

    public static void main(String[] args) throws InterruptedException {
        int threads = args.length > 0 ? Integer.parseInt(args[0]) : 1;
        long warmup = args.length > 1 ? Long.parseLong(args[1]) : 1000;
        for (int t = 0; t < threads; t++) {
            Thread th = new Thread(Alloc::loop, "jvmkit-alloc-" + t);
            th.setDaemon(true);
            th.start();
        }
        Thread.sleep(warmup);
        System.out.println("ready");
        System.out.flush();
        long last = rounds.sum();
        while (true) {
            Thread.sleep(1000);
            long now = rounds.sum();
            System.out.println("rounds " + (now - last));
            System.out.flush();
            last = now;
        }
    }
}
