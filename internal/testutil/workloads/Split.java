/**
 * Split keeps one thread, "jvmkit-split", burning CPU in two methods with a known split: {@code burn70}
 * does 70% of the work and {@code burn30} 30%, with the same code per iteration. Run it with
 * -XX:CompileCommand=dontinline,Split::burn* so that each is a frame of its own.
 *
 * <p>It prints "ready" once the thread runs. It uses about one core until it is killed.
 */
public class Split {
    static volatile long sink;

    public static void main(String[] args) throws InterruptedException {
        Thread t = new Thread(Split::loop, "jvmkit-split");
        t.setDaemon(true);
        t.start();
        Thread.sleep(500);
        System.out.println("ready");
        System.out.flush();
        while (true) {
            Thread.sleep(1000);
        }
    }

    static void loop() {
        long x = 0x9E3779B97F4A7C15L;
        while (true) {
            x = burn70(x, 70_000);
            x = burn30(x, 30_000);
            sink = x;
        }
    }

    static long burn70(long x, int n) {
        for (int i = 0; i < n; i++) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
        }
        return x;
    }

    static long burn30(long x, int n) {
        for (int i = 0; i < n; i++) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
        }
        return x;
    }
}
