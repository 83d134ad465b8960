import java.util.concurrent.locks.LockSupport;

/**
 * Measures application stalls: a ticker thread sleeps 10 ms in a loop and prints "stall <ms>" when a
 * tick comes more than 100 ms late. Many parked threads make a thread dump large (megabytes), so a
 * client that does not read a streamed dump would stall the JVM at a safepoint.
 */
public class Ticker {
    public static void main(String[] args) throws Exception {
        int threads = args.length > 0 ? Integer.parseInt(args[0]) : 2000;
        for (int i = 0; i < threads; i++) {
            Thread t = new Thread(() -> { while (true) LockSupport.park(); }, "parked-with-a-rather-long-name-" + i);
            t.setDaemon(true);
            t.start();
        }
        Thread ticker = new Thread(() -> {
            long last = System.nanoTime();
            while (true) {
                try { Thread.sleep(10); } catch (InterruptedException e) { return; }
                long now = System.nanoTime();
                long late = (now - last) / 1_000_000 - 10;
                if (late > 100) System.out.println("stall " + late);
                last = now;
            }
        }, "ticker");
        ticker.setDaemon(true);
        ticker.start();
        System.out.println("ready");
        Thread.sleep(Long.MAX_VALUE);
    }
}
