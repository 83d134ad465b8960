import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Demo is a small, realistic application for demos and for tests that need more than an idle JVM.
 *
 * <p>Threads, all started before "ready" is printed:
 * <ul>
 *   <li>{@code demo-hasher}: hashes order keys with SHA-256 into a shared cache (CPU, allocation);
 *   <li>{@code demo-builder}: builds report strings out of cache samples (CPU, allocation, lock contention);
 *   <li>{@code demo-waiter}: WAITING in {@code Object.wait()} on {@code Demo.MAILBOX};
 *   <li>{@code demo-lock-holder}: holds the monitor of {@code Demo.LEDGER} forever (TIMED_WAITING in sleep);
 *   <li>{@code demo-blocked}: BLOCKED entering {@code synchronized (Demo.LEDGER)}.
 * </ul>
 * The cache grows to {@code Cache.MAX} entries and is then trimmed by half, so the heap sees steady young-gen
 * garbage and some promotion.
 *
 * <p>The two CPU workers run a duty cycle: they work for a share of every 50 ms period and sleep for the rest.
 * The share is the first program argument in percent (default 30), so the app uses about 0.6 cores.
 * The application runs until it is killed.
 */
public class Demo {
    static final Object MAILBOX = new Object();
    static final Object LEDGER = new Object();
    static final Cache CACHE = new Cache();
    static final AtomicLong ORDERS = new AtomicLong();
    static final long PERIOD_MILLIS = 50;

    // Written now and then so that the JIT cannot drop the work as dead code.
    static volatile long sink;

    public static void main(String[] args) throws InterruptedException {
        int duty = args.length > 0 ? Integer.parseInt(args[0]) : 30;
        if (duty < 1 || duty > 100) {
            throw new IllegalArgumentException("duty cycle must be 1..100 percent, got " + duty);
        }
        long workNanos = PERIOD_MILLIS * 1_000_000L * duty / 100;
        long sleepMillis = PERIOD_MILLIS - PERIOD_MILLIS * duty / 100;

        CountDownLatch holding = new CountDownLatch(1);
        start("demo-lock-holder", () -> holdLedger(holding));
        holding.await();
        Thread blocked = start("demo-blocked", Demo::enterLedger);
        Thread waiter = start("demo-waiter", Demo::waitForMail);
        start("demo-hasher", () -> dutyCycle(workNanos, sleepMillis, Demo::hashOrder));
        start("demo-builder", () -> dutyCycle(workNanos, sleepMillis, Demo::buildReport));

        awaitState(blocked, Thread.State.BLOCKED);
        awaitState(waiter, Thread.State.WAITING);
        System.out.println("ready");
        System.out.flush();
        while (true) {
            Thread.sleep(1000);
        }
    }

    static Thread start(String name, Runnable body) {
        Thread t = new Thread(body, name);
        t.setDaemon(true);
        t.start();
        return t;
    }

    static void awaitState(Thread t, Thread.State want) throws InterruptedException {
        while (t.getState() != want) {
            Thread.sleep(5);
        }
    }

    static void dutyCycle(long workNanos, long sleepMillis, Runnable step) {
        while (true) {
            long end = System.nanoTime() + workNanos;
            do {
                step.run();
            } while (System.nanoTime() - end < 0);
            if (sleepMillis > 0) {
                try {
                    Thread.sleep(sleepMillis);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }
    }

    static final ThreadLocal<MessageDigest> SHA256 = ThreadLocal.withInitial(() -> {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    });

    static void hashOrder() {
        long n = ORDERS.incrementAndGet();
        String key = "order-" + (n % 20_000);
        byte[] digest = SHA256.get().digest(key.getBytes(StandardCharsets.UTF_8));
        CACHE.put(key, digest);
    }

    static void buildReport() {
        StringBuilder sb = new StringBuilder(512);
        for (Map.Entry<String, byte[]> e : CACHE.sample(8)) {
            sb.append(e.getKey()).append('=').append(hex(e.getValue())).append(';');
        }
        sink += sb.toString().hashCode();
    }

    static String hex(byte[] b) {
        char[] out = new char[b.length * 2];
        final char[] digits = "0123456789abcdef".toCharArray();
        for (int i = 0; i < b.length; i++) {
            out[2 * i] = digits[(b[i] >> 4) & 0xf];
            out[2 * i + 1] = digits[b[i] & 0xf];
        }
        return new String(out);
    }

    static void holdLedger(CountDownLatch holding) {
        synchronized (LEDGER) {
            holding.countDown();
            while (true) {
                try {
                    Thread.sleep(60_000);
                } catch (InterruptedException e) {
                    // Never let go of the monitor.
                }
            }
        }
    }

    static void enterLedger() {
        synchronized (LEDGER) {
            sink++;
        }
    }

    static void waitForMail() {
        synchronized (MAILBOX) {
            while (true) {
                try {
                    MAILBOX.wait();
                } catch (InterruptedException e) {
                    return;
                }
            }
        }
    }

    /** A bounded cache: a HashMap that is trimmed by half when it grows past MAX entries. */
    static final class Cache {
        static final int MAX = 4096;
        private final Map<String, byte[]> map = new HashMap<>();

        synchronized void put(String key, byte[] value) {
            map.put(key, value);
            if (map.size() > MAX) {
                trim();
            }
        }

        private void trim() {
            Iterator<Map.Entry<String, byte[]>> it = map.entrySet().iterator();
            for (int n = map.size() / 2; n > 0 && it.hasNext(); n--) {
                it.next();
                it.remove();
            }
        }

        synchronized List<Map.Entry<String, byte[]>> sample(int n) {
            List<Map.Entry<String, byte[]>> out = new ArrayList<>(n);
            for (Map.Entry<String, byte[]> e : map.entrySet()) {
                if (out.size() == n) {
                    break;
                }
                out.add(Map.entry(e.getKey(), e.getValue()));
            }
            return out;
        }
    }
}
