/**
 * Churn runs short-lived busy threads, for profilers that must cope with threads that end while they
 * are sampled: one after the other, two at a time, threads named {@code jvmkit-churn-<n>} spin in Java
 * code for 20 to 120 ms and end.
 *
 * <p>It prints "ready" when the first threads started, then runs until killed.
 */
public class Churn {
    static volatile long sink;

    public static void main(String[] args) throws InterruptedException {
        boolean ready = false;
        for (long i = 0; ; i++) {
            Thread[] batch = new Thread[2];
            for (int k = 0; k < batch.length; k++) {
                long ms = 20 + (i * 37 + k * 53) % 100;
                batch[k] = new Thread(() -> spin(ms), "jvmkit-churn-" + (2 * i + k));
                batch[k].start();
            }
            if (!ready) {
                System.out.println("ready");
                System.out.flush();
                ready = true;
            }
            for (Thread t : batch) {
                t.join();
            }
        }
    }

    static void spin(long ms) {
        long end = System.nanoTime() + ms * 1_000_000;
        long x = 1;
        while (System.nanoTime() < end) {
            for (int i = 0; i < 1000; i++) {
                x = x * 6364136223846793005L + 1442695040888963407L;
            }
        }
        sink += x;
    }
}
