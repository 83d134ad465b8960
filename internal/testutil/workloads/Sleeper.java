/**
 * Sleeper is the default workload: an idle JVM that tests attach to.
 *
 * <p>It starts a named thread "jvmkit-worker" that sleeps, prints "ready" once that thread runs, and then sleeps
 * until it is killed. It allocates nothing after start-up and prints nothing else.
 */
public class Sleeper {
    public static void main(String[] args) throws InterruptedException {
        Thread worker = new Thread(Sleeper::sleepForever, "jvmkit-worker");
        worker.setDaemon(true);
        worker.start();
        // HotSpot names the thread for the OS (/proc/<pid>/task/<tid>/comm) in the thread itself, before it runs
        // any Java code: once it sleeps in sleepForever, its name is visible. Polling the state needs no class.
        while (worker.getState() != Thread.State.TIMED_WAITING) {
            Thread.sleep(1);
        }
        System.out.println("ready");
        System.out.flush();
        sleepForever();
    }

    static void sleepForever() {
        while (true) {
            try {
                Thread.sleep(1000);
            } catch (InterruptedException e) {
                // Keep sleeping: only a signal ends this workload.
            }
        }
    }
}
