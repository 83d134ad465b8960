import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.util.concurrent.locks.LockSupport;

/**
 * Syscalls keeps one thread, "jvmkit-sys", alternating three native calls that each end in a system call
 * of their own: {@code File.length} (stat), {@code FileOutputStream.write} (write) and
 * {@code LockSupport.parkNanos} (futex). A profiler that names the Java native method above each system
 * call can be checked against the kernel's own frames: stat only under UnixFileSystem.getLength, write only
 * under FileOutputStream.writeBytes, futex only under Unsafe.park. A second thread, "jvmkit-clock", reads
 * System.nanoTime in a loop: clock_gettime, which runs in the vDSO.
 *
 * <p>Arguments: the directory for its scratch file (default: the working directory). It prints "ready"
 * once the thread runs, and runs until it is killed.
 */
public class Syscalls {
    static volatile long sink;

    public static void main(String[] args) throws Exception {
        File dir = new File(args.length > 0 ? args[0] : ".");
        File f = new File(dir, "syscalls-" + ProcessHandle.current().pid() + ".tmp");
        f.deleteOnExit();
        Thread t = new Thread(() -> loop(f), "jvmkit-sys");
        t.setDaemon(true);
        t.start();
        Thread clock = new Thread(Syscalls::clock, "jvmkit-clock");
        clock.setDaemon(true);
        clock.start();
        Thread.sleep(300);
        System.out.println("ready");
        System.out.flush();
        while (true) {
            Thread.sleep(1000);
        }
    }

    static void clock() {
        long x = 0;
        while (true) {
            x += System.nanoTime();
            if ((x & 0xfff) == 0) {
                sink += x;
            }
        }
    }

    static void loop(File f) {
        byte[] buf = new byte[4096];
        try (FileOutputStream out = new FileOutputStream(f)) {
            long n = 0;
            while (true) {
                sink += f.length();
                out.write(buf);
                if (++n % 256 == 0) {
                    out.getChannel().position(0);
                }
                LockSupport.parkNanos(20_000);
            }
        } catch (IOException e) {
            throw new RuntimeException(e);
        }
    }
}
