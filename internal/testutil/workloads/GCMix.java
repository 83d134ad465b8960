/**
 * GCMix keeps a collector busy with every kind of pause: short-lived garbage (young collections), a
 * retained set that turns over slowly (promotion, old-generation growth: G1's concurrent cycles with their
 * Remark and Cleanup pauses and mixed collections, Parallel's and Serial's full collections when the old
 * generation fills), and an explicit System.gc() at a fixed period (a full collection on every collector).
 *
 * <p>Usage: {@code GCMix [retained MB [System.gc period ms]]} (default 40 MB, 3000 ms; 0: never). It prints
 * "ready" after a short warm-up, then runs until killed.
 */
public class GCMix {
    static long sink;

    public static void main(String[] args) {
        int retainedMB = args.length > 0 ? Integer.parseInt(args[0]) : 40;
        long period = (args.length > 1 ? Long.parseLong(args[1]) : 3000) * 1_000_000L;
        int slots = retainedMB * 16; // 64 KiB each
        byte[][] retained = new byte[slots][];
        java.util.Random r = new java.util.Random(1);
        long lastGC = System.nanoTime();
        boolean ready = false;
        for (long i = 0; ; i++) {
            byte[] garbage = new byte[256 + r.nextInt(4096)];
            sink += garbage.length;
            if ((i & 15) == 0) {
                retained[r.nextInt(slots)] = new byte[64 << 10];
            }
            if (!ready && i == 200_000) {
                System.out.println("ready");
                System.out.flush();
                ready = true;
            }
            if (period > 0 && (i & 1023) == 0 && System.nanoTime() - lastGC > period) {
                System.gc();
                lastGC = System.nanoTime();
            }
        }
    }
}
