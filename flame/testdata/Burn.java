import java.io.FileOutputStream;
import java.io.IOException;
import java.util.HashMap;
import java.util.Map;

/**
 * Burn is the workload recorded for the perf script fixtures (see record.sh): three threads that give a
 * profile with JIT frames, inlining, allocation (GC threads), system calls (kernel frames), lambdas and
 * constructors (names with '$', '<' and '>').
 */
public class Burn {
    static volatile double sinkD;
    static volatile int sinkI;

    public static void main(String[] args) throws Exception {
        start("burn-math", Burn::math);
        start("burn-str", Burn::strings);
        start("burn-io", () -> {
            try {
                io();
            } catch (IOException e) {
                throw new RuntimeException(e);
            }
        });
        System.out.println("ready");
        System.out.flush();
        while (true) {
            Thread.sleep(1000);
        }
    }

    static void start(String name, Runnable r) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        t.start();
    }

    static void math() {
        double x = 1;
        while (true) {
            x = f(x);
            sinkD = x;
        }
    }

    static double f(double x) {
        for (int i = 0; i < 1000; i++) {
            x = g(x) + h(x);
        }
        return x;
    }

    static double g(double x) {
        return Math.sin(x) * 0.5;
    }

    static double h(double x) {
        return Math.sqrt(Math.abs(x)) * 0.25;
    }

    static void strings() {
        Map<String, Integer> m = new HashMap<>();
        int n = 0;
        while (true) {
            StringBuilder sb = new StringBuilder();
            for (int i = 0; i < 50; i++) {
                sb.append(i).append('-').append(n);
            }
            String s = sb.toString();
            m.merge(s.substring(0, 20), 1, Integer::sum);
            if (m.size() > 10_000) {
                m = new HashMap<>();
            }
            sinkI = s.hashCode();
            n++;
        }
    }

    static void io() throws IOException {
        byte[] buf = new byte[512];
        try (FileOutputStream out = new FileOutputStream("/dev/null")) {
            while (true) {
                buf[0]++;
                out.write(buf);
            }
        }
    }
}
