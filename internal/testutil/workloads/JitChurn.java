import java.io.InputStream;
import java.lang.reflect.Constructor;
import java.nio.charset.StandardCharsets;
import java.util.function.LongBinaryOperator;

/**
 * JitChurn keeps the JIT busy replacing code, for JIT symbol logs: hot methods in classes that live for
 * a fraction of a second. Each class is a copy of {@code JitChurnHot0000} renamed {@code JitChurnHot<n>}
 * (the name patched in the class file, same length) and defined by its own throwaway class loader; it
 * is run hot for about 100 ms, so its methods are compiled by C1 and then C2, and half-way through it
 * takes a branch that its C2 code never saw, which deoptimizes and recompiles it. Every fifth round
 * System.gc() unloads the dead classes, which frees their code: with a small code cache
 * (-XX:ReservedCodeCacheSize) the JIT soon reuses the addresses.
 *
 * <p>Arguments: [seconds]. It prints "ready" after the first round; with seconds, it stops then and
 * prints "ops N", the number of calls made (the throughput), else it runs until killed.
 */
public class JitChurn {
    static volatile long sink;

    static final class Loader extends ClassLoader {
        Loader() {
            super(JitChurn.class.getClassLoader());
        }

        Class<?> define(String name, byte[] b) {
            return defineClass(name, b, 0, b.length);
        }
    }

    public static void main(String[] args) throws Exception {
        long seconds = args.length > 0 ? Long.parseLong(args[0]) : 0;
        byte[] template;
        try (InputStream in = JitChurn.class.getResourceAsStream("/JitChurnHot0000.class")) {
            template = in.readAllBytes();
        }
        byte[] key = "JitChurnHot0000".getBytes(StandardCharsets.ISO_8859_1);
        long end = seconds > 0 ? System.nanoTime() + seconds * 1_000_000_000L : Long.MAX_VALUE;
        long ops = 0;
        boolean ready = false;
        for (int round = 1; System.nanoTime() < end; round++) {
            for (int k = 0; k < 2; k++) {
                String name = String.format("JitChurnHot%04d", (round * 2 + k) % 10000);
                byte[] b = patch(template, key, name.getBytes(StandardCharsets.ISO_8859_1));
                // Package-private in another loader's runtime package: reflection needs setAccessible.
                Constructor<?> c = new Loader().define(name, b).getDeclaredConstructor();
                c.setAccessible(true);
                LongBinaryOperator op = (LongBinaryOperator) c.newInstance();
                long x = round;
                long t0 = System.nanoTime(), half = t0 + 50_000_000L, stop = t0 + 100_000_000L;
                for (long now = t0; now < stop; now = System.nanoTime()) {
                    long phase = now < half ? 0 : 1;
                    for (int i = 0; i < 1000; i++) {
                        x = op.applyAsLong(x, phase);
                    }
                    ops += 1000;
                }
                sink += x;
            }
            if (round % 5 == 0) {
                System.gc();
            }
            if (!ready) {
                System.out.println("ready");
                System.out.flush();
                ready = true;
            }
        }
        if (seconds > 0) {
            System.out.println("ops " + ops);
        }
    }

    static byte[] patch(byte[] b, byte[] from, byte[] to) {
        byte[] out = b.clone();
        outer:
        for (int i = 0; i + from.length <= out.length; i++) {
            for (int j = 0; j < from.length; j++) {
                if (out[i + j] != from[j]) {
                    continue outer;
                }
            }
            System.arraycopy(to, 0, out, i, to.length);
        }
        return out;
    }
}

/** The template of JitChurn's throwaway classes; never loaded under this name. */
class JitChurnHot0000 implements LongBinaryOperator {
    public long applyAsLong(long x, long phase) {
        if (phase == 0) {
            return mix(step(x));
        }
        return tail(step(x) ^ phase);
    }

    static long step(long x) {
        for (int i = 0; i < 16; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
        }
        return x;
    }

    static long mix(long x) {
        x ^= x >>> 33;
        x *= 0xff51afd7ed558ccdL;
        x ^= x >>> 33;
        return x;
    }

    static long tail(long x) {
        for (int i = 0; i < 8; i++) {
            x = Long.rotateLeft(x, 7) + i;
        }
        return x;
    }
}
