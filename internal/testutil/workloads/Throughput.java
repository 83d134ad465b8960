/**
 * Throughput measures its own speed, for profiler overhead benchmarks: threads named
 * {@code jvmkit-tp-<n>} run a fixed unit of work (hashing a small array through a few compiled
 * methods) in a loop, and the main thread prints "ops <total> <nanos>" every 50 ms, where total is the
 * number of units all threads finished and nanos is System.nanoTime().
 *
 * <p>Argument: the number of worker threads (default 1). It prints "ready" once the workers have run
 * for a second (the hot methods are compiled by then), then runs until killed.
 */
public class Throughput {
    static final java.util.concurrent.atomic.LongAdder ops = new java.util.concurrent.atomic.LongAdder();
    static volatile long sink;

    public static void main(String[] args) throws InterruptedException {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 1;
        for (int i = 0; i < n; i++) {
            Thread t = new Thread(Throughput::work, "jvmkit-tp-" + i);
            t.setDaemon(true);
            t.start();
        }
        Thread.sleep(1000);
        System.out.println("ready");
        while (true) {
            System.out.println("ops " + ops.sum() + " " + System.nanoTime());
            System.out.flush();
            Thread.sleep(50);
        }
    }

    static void work() {
        int[] a = new int[256];
        for (int i = 0; i < a.length; i++) {
            a[i] = i * 31;
        }
        while (true) {
            sink += unit(a);
            ops.increment();
        }
    }

    static long unit(int[] a) {
        long h = 17;
        for (int r = 0; r < 16; r++) {
            h = mix(h, a, r);
        }
        return h;
    }

    static long mix(long h, int[] a, int r) {
        for (int v : a) {
            h = h * 31 + (v ^ r);
        }
        return h;
    }
}
