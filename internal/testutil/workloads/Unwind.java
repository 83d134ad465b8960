import java.security.MessageDigest;

/**
 * Unwind runs threads whose stacks have known shapes, for stack walkers (package unwind):
 *
 * <ul>
 *   <li>"uw-deep": compiled recursion, {@code rec} 21 levels deep under {@code deep}, with {@code leaf}
 *       spinning on top (run with -XX:CompileCommand=dontinline,Unwind::rec so that every level is a
 *       frame of its own);
 *   <li>"uw-mixed": compiled code calling interpreted code calling compiled code ({@code mixedOuter} ->
 *       {@code interp} -> {@code mixedInner}; run with -XX:CompileCommand=exclude,Unwind::interp), so
 *       the stack crosses the c2i and i2c adapters;
 *   <li>"uw-sha": SHA-256 digests, which run in an intrinsic stub;
 *   <li>"uw-mega": megamorphic interface calls (vtable and itable stubs);
 *   <li>"uw-sleep": Thread.sleep, native code with a Java frame anchor.
 * </ul>
 *
 * <p>Arguments: the names of the threads to run (default: all). It prints "ready" once the threads
 * have run for a second (long enough for the JIT to compile the hot methods), then runs until killed.
 */
public class Unwind {
    static volatile long sink;

    public static void main(String[] args) throws Exception {
        java.util.Set<String> want = new java.util.HashSet<>(java.util.Arrays.asList(args));
        start(want, "uw-deep", () -> { while (true) sink += deep(); });
        start(want, "uw-mixed", () -> { while (true) sink += mixedOuter(1000); });
        start(want, "uw-sha", Unwind::sha);
        start(want, "uw-mega", () -> { while (true) sink += mega(10_000); });
        start(want, "uw-sleep", Unwind::sleep);
        Thread.sleep(1500);
        System.out.println("ready");
        System.out.flush();
        while (true) {
            Thread.sleep(1000);
        }
    }

    static void start(java.util.Set<String> want, String name, Runnable r) {
        if (!want.isEmpty() && !want.contains(name)) {
            return;
        }
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        t.start();
    }

    static long deep() {
        return rec(21);
    }

    static long rec(int n) {
        if (n == 0) {
            return leaf(20_000);
        }
        return rec(n - 1) + 1;
    }

    static long leaf(int n) {
        long x = 0x9E3779B97F4A7C15L;
        for (int i = 0; i < n; i++) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
        }
        return x;
    }

    static long mixedOuter(int n) {
        long s = 0;
        for (int i = 0; i < n; i++) {
            s += interp(i);
        }
        return s;
    }

    // Excluded from compilation by the test's -XX:CompileCommand.
    static long interp(int i) {
        long s = i;
        s += mixedInner(i);
        return s;
    }

    static long mixedInner(int i) {
        long x = i;
        for (int k = 0; k < 200; k++) {
            x = x * 31 + k;
        }
        return x;
    }

    static void sha() {
        try {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            byte[] buf = new byte[1 << 16];
            while (true) {
                md.update(buf);
                buf[0] = md.digest()[0];
            }
        } catch (Exception e) {
            throw new RuntimeException(e);
        }
    }

    interface Shape {
        long area(long x);
    }

    static final class A implements Shape { public long area(long x) { return x + 1; } }
    static final class B implements Shape { public long area(long x) { return x * 3; } }
    static final class C implements Shape { public long area(long x) { return x ^ 5; } }
    static final class D implements Shape { public long area(long x) { return x - 7; } }
    static final class E implements Shape { public long area(long x) { return x << 1; } }

    static final Shape[] SHAPES = {new A(), new B(), new C(), new D(), new E()};

    static long mega(int n) {
        long s = 0;
        for (int i = 0; i < n; i++) {
            s += SHAPES[i % SHAPES.length].area(i);
        }
        return s;
    }

    static void sleep() {
        while (true) {
            try {
                // Long: a walker that stops the JVM must find this thread in the sleep. With 1 s sleeps,
                // a sleep that ended while the JVM was stopped (SIGSTOP, jhsdb) ended right at SIGCONT,
                // so a stop just after caught the thread back in sleep()'s loop now and then.
                Thread.sleep(600_000);
            } catch (InterruptedException e) {
                return;
            }
        }
    }
}
