import java.util.concurrent.CountDownLatch;

/**
 * Deadlock is a workload for thread dump tests: two threads, "jvmkit-deadlock-a" and "jvmkit-deadlock-b",
 * each hold one monitor and wait for the other's, so HotSpot's deadlock detection reports them. It prints
 * "ready" once both are BLOCKED and then sleeps until it is killed.
 */
public class Deadlock {
    static final Object FIRST = new Object();
    static final Object SECOND = new Object();

    public static void main(String[] args) throws InterruptedException {
        CountDownLatch bothHold = new CountDownLatch(2);
        Thread a = start("jvmkit-deadlock-a", () -> lockBoth(FIRST, SECOND, bothHold));
        Thread b = start("jvmkit-deadlock-b", () -> lockBoth(SECOND, FIRST, bothHold));
        while (a.getState() != Thread.State.BLOCKED || b.getState() != Thread.State.BLOCKED) {
            Thread.sleep(5);
        }
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

    static void lockBoth(Object first, Object second, CountDownLatch bothHold) {
        synchronized (first) {
            bothHold.countDown();
            try {
                bothHold.await();
            } catch (InterruptedException e) {
                return;
            }
            synchronized (second) {
                System.out.println("unreachable");
            }
        }
    }
}
