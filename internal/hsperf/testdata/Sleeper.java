// Sleeper is the JVM workload of the hsperf tests: it says "ready" once main runs (the JVM has
// marked its hsperfdata file accessible by then) and exits normally when stdin is closed, so that
// the JVM deletes its hsperfdata file.
public class Sleeper {
    public static void main(String[] args) throws Exception {
        System.out.println("ready");
        System.out.flush();
        while (System.in.read() >= 0) {
        }
    }
}
