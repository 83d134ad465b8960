import java.util.concurrent.CountDownLatch;
import java.util.concurrent.locks.LockSupport;

/**
 * Threads starts many named threads that stay put, for tests that list threads from the outside.
 *
 * <p>The first program argument is the number of plain threads (default 500), named
 * {@code jvmkit-t-0000} and up; half of them park, half sleep. Besides those:
 * <ul>
 *   <li>names that exercise String decoding: Latin-1 beyond ASCII ({@code jvmkit-latin-ÄÖÜ-ß-é}), UTF-16
 *       with a surrogate pair ({@code jvmkit-utf16-漢字-😀}), an empty name, and one of 70000 characters
 *       ({@code jvmkit-long-xxx...}) that is longer than any reader should decode;
 *   <li>{@code jvmkit-spin}: runs Java code all the time (a busy loop).
 * </ul>
 * All threads are daemons and started before "ready" is printed; none ever ends, so the set of threads is
 * stable. Run it with -XX:-UseDynamicNumberOfCompilerThreads to keep the JIT's threads fixed too.
 *
 * <p>With "churn" as the second argument, {@code jvmkit-churner} also starts short-lived threads, named
 * {@code jvmkit-churn-<n>}, one after the other, a few at a time, for readers that must cope with threads
 * that exit while they are read. It runs until it is killed.
 */
public class Threads {
    static volatile long sink;

    public static void main(String[] args) throws InterruptedException {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 500;
        boolean churn = args.length > 1 && args[1].equals("churn");
        CountDownLatch started = new CountDownLatch(n + 5 + (churn ? 1 : 0));
        for (int i = 0; i < n; i++) {
            boolean park = i % 2 == 0;
            start(String.format("jvmkit-t-%04d", i), started, park ? Threads::parkForever : Threads::sleepForever);
        }
        start("jvmkit-latin-\u00c4\u00d6\u00dc-\u00df-\u00e9", started, Threads::parkForever);
        start("jvmkit-utf16-\u6f22\u5b57-\ud83d\ude00", started, Threads::parkForever);
        start("", started, Threads::parkForever);
        start("jvmkit-long-" + "x".repeat(70_000), started, Threads::parkForever);
        start("jvmkit-spin", started, Threads::spin);
        if (churn) {
            start("jvmkit-churner", started, Threads::churn);
        }
        started.await();
        System.out.println("ready");
        System.out.flush();
        parkForever();
    }

    static void start(String name, CountDownLatch started, Runnable body) {
        Thread t = new Thread(() -> {
            started.countDown();
            body.run();
        }, name);
        t.setDaemon(true);
        t.start();
    }

    static void parkForever() {
        while (true) {
            LockSupport.park();
        }
    }

    static void sleepForever() {
        while (true) {
            try {
                Thread.sleep(60_000);
            } catch (InterruptedException e) {
                // Keep sleeping.
            }
        }
    }

    static void churn() {
        for (long i = 0; ; i++) {
            Thread[] batch = new Thread[4];
            for (int k = 0; k < batch.length; k++) {
                batch[k] = new Thread(() -> sink++, "jvmkit-churn-" + (4 * i + k));
                batch[k].setDaemon(true);
                batch[k].start();
            }
            for (Thread t : batch) {
                try {
                    t.join();
                } catch (InterruptedException e) {
                    return;
                }
            }
        }
    }

    static void spin() {
        long x = 0;
        while (true) {
            x = x * 31 + 7;
            if ((x & 0xffff) == 0) {
                sink = x;
            }
        }
    }
}
