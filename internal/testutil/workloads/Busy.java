/**
 * Busy keeps one thread, "jvmkit-busy", spinning on integer arithmetic so that profilers sample a single hot
 * Java method ({@code Busy.spin}, with {@code Busy.step} inlined into it) that the JIT compiles early.
 *
 * <p>It prints "ready" once the thread runs. It uses about one core until it is killed.
 */
public class Busy {
    // Written now and then so that the JIT cannot drop the loop as dead code.
    static volatile long sink;

    public static void main(String[] args) throws InterruptedException {
        Thread spinner = new Thread(Busy::spinForever, "jvmkit-busy");
        spinner.setDaemon(true);
        spinner.start();
        System.out.println("ready");
        System.out.flush();
        while (true) {
            Thread.sleep(1000);
        }
    }

    static void spinForever() {
        long x = 0x9E3779B97F4A7C15L;
        while (true) {
            x = spin(x, 1_000_000);
            sink = x;
        }
    }

    // A xorshift generator: a few cycles per iteration, no allocation; the JIT inlines step into spin.
    static long spin(long x, int n) {
        for (int i = 0; i < n; i++) {
            x = step(x);
        }
        return x;
    }

    static long step(long x) {
        x ^= x << 13;
        x ^= x >>> 7;
        return x ^ (x << 17);
    }
}
