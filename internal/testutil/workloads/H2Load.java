import java.math.BigDecimal;
import java.math.RoundingMode;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A JDBC client that keeps an H2 TCP server busy with the mix of a small order-entry application: orders
 * inserted in batches with DECIMAL prices, joins over customers, orders and order lines, aggregates with
 * DECIMAL arithmetic (done by the server), point updates, and deletes that keep the database at a bounded
 * size. Only java.sql is used: the driver is found on the class path (h2.jar).
 *
 * The mix is the same at every step, however far a client or an earlier client on the same database got:
 * the schema is made once (a later client goes on with the database as it is), it starts with RECENT
 * orders already in it, every query reads only the RECENT newest orders, and older ones are deleted as new
 * ones come. So two servers under two clients allocate alike per step, whatever their speed (the
 * allocation profiles of two instances are compared).
 *
 * Arguments: JDBC URL, duration in seconds, client threads, and optionally the steps per second of all
 * threads together (0 or none: as fast as they can; a client that falls behind does not catch up in a
 * burst). Each thread does at least one step. Prints
 * "ready" once the schema is set up, then "ops N errors M" when the duration is over or it is stopped, and
 * exits with status 1 if any statement failed.
 */
public class H2Load {
    static final int CUSTOMERS = 500;
    static final int ITEMS = 200;
    /** The orders every query reads (the newest) and the database keeps. */
    static final int RECENT = 2_000;
    static final String[] REGIONS = {"north", "south", "east", "west", "centre"};

    static final AtomicLong ops = new AtomicLong();
    static final AtomicLong errors = new AtomicLong();
    static final AtomicLong nextOrder = new AtomicLong();
    /** With a rate: the time between two steps of all threads, and when the next step is due. */
    static long stepNanos;
    static long nextStep;

    /** Waits until the next step is due, with a rate. */
    static void pace() throws InterruptedException {
        if (stepNanos == 0) {
            return;
        }
        long due;
        synchronized (H2Load.class) {
            long now = System.nanoTime();
            // Behind by more than a second: start again from now rather than catch up in a burst.
            if (nextStep == 0 || now - nextStep > 1_000_000_000L) {
                nextStep = now;
            }
            due = nextStep;
            nextStep += stepNanos;
        }
        long wait = due - System.nanoTime();
        if (wait > 0) {
            Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
        }
    }

    public static void main(String[] args) throws Exception {
        String url = args[0];
        long deadline = System.nanoTime() + Long.parseLong(args[1]) * 1_000_000_000L;
        int threads = Integer.parseInt(args[2]);
        double rate = args.length > 3 ? Double.parseDouble(args[3]) : 0;
        if (rate > 0) {
            stepNanos = (long) (1e9 / rate);
        }
        try (Connection c = DriverManager.getConnection(url, "sa", "")) {
            setUp(c);
        }
        System.out.println("ready");
        // Stopped early (SIGTERM), the client still reports what it did.
        Thread report = new Thread(() -> System.out.println("ops " + ops.get() + " errors " + errors.get()));
        Runtime.getRuntime().addShutdownHook(report);
        Thread[] workers = new Thread[threads];
        for (int i = 0; i < threads; i++) {
            final long seed = i;
            workers[i] = new Thread(() -> run(url, deadline, seed), "h2load-" + i);
            workers[i].start();
        }
        for (Thread w : workers) {
            w.join();
        }
        System.exit(errors.get() == 0 ? 0 : 1);
    }

    static void setUp(Connection c) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute("CREATE TABLE IF NOT EXISTS customers (id INT PRIMARY KEY, name VARCHAR(64), region VARCHAR(16), "
                    + "discount DECIMAL(5,4))");
            s.execute("CREATE TABLE IF NOT EXISTS items (id INT PRIMARY KEY, title VARCHAR(128), price DECIMAL(12,2))");
            s.execute("CREATE TABLE IF NOT EXISTS orders (id BIGINT PRIMARY KEY, customer_id INT REFERENCES customers(id), "
                    + "created TIMESTAMP, status VARCHAR(16))");
            s.execute("CREATE TABLE IF NOT EXISTS order_lines (order_id BIGINT REFERENCES orders(id) ON DELETE CASCADE, "
                    + "line INT, item_id INT REFERENCES items(id), qty INT, price DECIMAL(12,2), "
                    + "PRIMARY KEY (order_id, line))");
            s.execute("CREATE INDEX IF NOT EXISTS orders_customer ON orders(customer_id)");
            try (ResultSet rs = s.executeQuery("SELECT COALESCE(MAX(id), 0) FROM orders")) {
                rs.next();
                nextOrder.set(rs.getLong(1));
            }
            if (nextOrder.get() > 0) {
                return; // an earlier client made it
            }
        }
        c.setAutoCommit(false);
        Random r = new Random(42);
        try (PreparedStatement p = c.prepareStatement("INSERT INTO customers VALUES (?, ?, ?, ?)")) {
            for (int i = 0; i < CUSTOMERS; i++) {
                p.setInt(1, i);
                p.setString(2, "customer-" + Long.toString(r.nextLong() & Long.MAX_VALUE, 36));
                p.setString(3, REGIONS[r.nextInt(REGIONS.length)]);
                p.setBigDecimal(4, BigDecimal.valueOf(r.nextInt(2000), 4));
                p.addBatch();
            }
            p.executeBatch();
        }
        try (PreparedStatement p = c.prepareStatement("INSERT INTO items VALUES (?, ?, ?)")) {
            for (int i = 0; i < ITEMS; i++) {
                p.setInt(1, i);
                p.setString(2, "item " + i + " " + Long.toString(r.nextLong() & Long.MAX_VALUE, 36));
                p.setBigDecimal(3, BigDecimal.valueOf(100 + r.nextInt(100_000), 2));
                p.addBatch();
            }
            p.executeBatch();
        }
        // The RECENT orders every query reads, there from the first step.
        try (PreparedStatement order = c.prepareStatement("INSERT INTO orders VALUES (?, ?, CURRENT_TIMESTAMP, ?)");
             PreparedStatement line = c.prepareStatement("INSERT INTO order_lines VALUES (?, ?, ?, ?, "
                     + "(SELECT price FROM items WHERE id = ?))")) {
            for (int n = 0; n < RECENT; n++) {
                insertOrder(r, nextOrder.incrementAndGet(), order, line);
            }
            order.executeBatch();
            line.executeBatch();
        }
        c.commit();
        c.setAutoCommit(true);
    }

    /** Adds an order and its lines to the statements' batches. */
    static void insertOrder(Random r, long id, PreparedStatement order, PreparedStatement line) throws SQLException {
        order.setLong(1, id);
        order.setInt(2, r.nextInt(CUSTOMERS));
        order.setString(3, r.nextBoolean() ? "open" : "shipped");
        order.addBatch();
        int lines = 1 + r.nextInt(8);
        for (int i = 0; i < lines; i++) {
            int item = r.nextInt(ITEMS);
            line.setLong(1, id);
            line.setInt(2, i);
            line.setInt(3, item);
            line.setInt(4, 1 + r.nextInt(10));
            line.setInt(5, item);
            line.addBatch();
        }
    }

    static void run(String url, long deadline, long seed) {
        Random r = new Random(seed);
        try (Connection c = DriverManager.getConnection(url, "sa", "");
             PreparedStatement order = c.prepareStatement("INSERT INTO orders VALUES (?, ?, CURRENT_TIMESTAMP, ?)");
             PreparedStatement line = c.prepareStatement("INSERT INTO order_lines VALUES (?, ?, ?, ?, "
                     + "(SELECT price FROM items WHERE id = ?))");
             PreparedStatement byCustomer = c.prepareStatement(
                     "SELECT o.id, SUM(l.qty * l.price * (1 - cu.discount)) AS total, COUNT(*) "
                     + "FROM orders o JOIN order_lines l ON l.order_id = o.id "
                     + "JOIN customers cu ON cu.id = o.customer_id WHERE o.customer_id = ? AND o.id > ? "
                     + "GROUP BY o.id ORDER BY total DESC LIMIT 10");
             PreparedStatement byRegion = c.prepareStatement(
                     "SELECT cu.region, SUM(l.qty * l.price), AVG(l.price), MAX(l.qty * l.price), COUNT(*) "
                     + "FROM order_lines l JOIN orders o ON o.id = l.order_id "
                     + "JOIN customers cu ON cu.id = o.customer_id WHERE o.id > ? GROUP BY cu.region");
             PreparedStatement topItems = c.prepareStatement(
                     "SELECT i.title, SUM(l.qty), SUM(l.qty * l.price) AS revenue FROM order_lines l "
                     + "JOIN items i ON i.id = l.item_id WHERE l.order_id > ? GROUP BY i.title "
                     + "ORDER BY revenue DESC LIMIT 5");
             PreparedStatement reprice = c.prepareStatement(
                     "UPDATE items SET price = ROUND(price * ?, 2) WHERE id = ?");
             PreparedStatement trim = c.prepareStatement("DELETE FROM orders WHERE id < ?")) {
            // At least one step, however slow the machine: a run that did nothing proves nothing.
            do {
                try {
                    pace();
                    step(r, order, line, byCustomer, byRegion, topItems, reprice, trim);
                    ops.incrementAndGet();
                } catch (SQLException e) {
                    if (errors.incrementAndGet() <= 5) {
                        e.printStackTrace();
                    }
                } catch (InterruptedException e) {
                    return;
                }
            } while (System.nanoTime() < deadline);
        } catch (SQLException e) {
            errors.incrementAndGet();
            e.printStackTrace();
        }
    }

    static void step(Random r, PreparedStatement order, PreparedStatement line, PreparedStatement byCustomer,
            PreparedStatement byRegion, PreparedStatement topItems, PreparedStatement reprice,
            PreparedStatement trim) throws SQLException {
        long id = nextOrder.incrementAndGet();
        insertOrder(r, id, order, line);
        order.executeBatch();
        line.executeBatch();

        byCustomer.setInt(1, r.nextInt(CUSTOMERS));
        byCustomer.setLong(2, id - RECENT);
        BigDecimal best = BigDecimal.ZERO;
        try (ResultSet rs = byCustomer.executeQuery()) {
            while (rs.next()) {
                best = best.max(rs.getBigDecimal(2));
            }
        }
        if (id % 4 == 0) {
            byRegion.setLong(1, id - RECENT / 4);
            BigDecimal sum = BigDecimal.ZERO;
            try (ResultSet rs = byRegion.executeQuery()) {
                while (rs.next()) {
                    sum = sum.add(rs.getBigDecimal(2));
                }
            }
            if (sum.signum() < 0 || best.signum() < 0) {
                throw new SQLException("negative total " + sum + " " + best);
            }
        }
        if (id % 8 == 0) {
            topItems.setLong(1, id - RECENT / 2);
            try (ResultSet rs = topItems.executeQuery()) {
                while (rs.next()) {
                    rs.getString(1);
                }
            }
        }
        if (id % 16 == 0) {
            BigDecimal factor = BigDecimal.ONE.add(BigDecimal.valueOf(r.nextInt(21) - 10, 3))
                    .setScale(3, RoundingMode.HALF_EVEN);
            reprice.setBigDecimal(1, factor);
            reprice.setInt(2, r.nextInt(ITEMS));
            reprice.executeUpdate();
        }
        if (id % 50 == 0) {
            trim.setLong(1, id - RECENT);
            trim.executeUpdate();
        }
    }
}
