import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.function.IntUnaryOperator;

/**
 * ManyMethods fills the code cache with thousands of small compiled methods, for tests and benchmarks of code
 * cache readers.
 *
 * <p>It defines {@code classes} classes {@code gen.G0 .. gen.G<classes-1>} (first argument, default 120), each
 * with {@code methods} static methods {@code int m<i>(int)} (second argument, default 100), from class files it
 * writes itself (no compiler needed, so the same bytes on every JDK). Each class implements
 * {@link IntUnaryOperator}: {@code applyAsInt} calls all its methods in a chain. The main thread runs every
 * chain over and over, on a duty cycle (work 25 ms out of every 100 ms) so that all methods stay hot and get
 * compiled, while the JVM stays responsive on a small machine. A few lambdas (hidden classes) run too.
 *
 * <p>Run it with {@code -XX:CompileCommand=quiet -XX:CompileCommand=dontinline,gen.*::*} to get one nmethod per
 * method (otherwise the JIT inlines the small methods into the chains). It prints "ready" once every chain has
 * run; the methods are compiled over the next seconds. It runs until it is killed.
 */
public class ManyMethods {
    // Written now and then so that the JIT cannot drop the work as dead code.
    static volatile int sink;

    public static void main(String[] args) throws Exception {
        int classes = args.length > 0 ? Integer.parseInt(args[0]) : 120;
        int methods = args.length > 1 ? Integer.parseInt(args[1]) : 100;
        if (classes < 1 || methods < 1 || methods > 2000) {
            throw new IllegalArgumentException("need 1+ classes and 1..2000 methods per class");
        }
        Loader loader = new Loader();
        List<IntUnaryOperator> ops = new ArrayList<>();
        for (int c = 0; c < classes; c++) {
            String name = "gen.G" + c;
            Class<?> k = loader.define(name, classFile(name.replace('.', '/'), methods, c));
            ops.add((IntUnaryOperator) k.getDeclaredConstructor().newInstance());
        }
        ops.add(x -> x + 1);
        ops.add(x -> x * 3);
        ops.add(x -> x ^ (x >>> 7));
        int acc = 0;
        for (IntUnaryOperator op : ops) {
            acc += op.applyAsInt(acc);
        }
        sink = acc;
        System.out.println("ready");
        System.out.flush();
        while (true) {
            long end = System.nanoTime() + 25_000_000L;
            int x = 1;
            while (System.nanoTime() < end) {
                for (IntUnaryOperator op : ops) {
                    x = op.applyAsInt(x);
                }
            }
            sink = x;
            Thread.sleep(75);
        }
    }

    static final class Loader extends ClassLoader {
        Loader() {
            super(ManyMethods.class.getClassLoader());
        }

        Class<?> define(String name, byte[] b) {
            return defineClass(name, b, 0, b.length);
        }
    }

    /**
     * classFile writes a Java 8 class file (no stack map frames needed: the code has no branches):
     *
     * <pre>
     * public class NAME implements IntUnaryOperator {
     *     public NAME() {}
     *     public static int m<i>(int x) { return (x * (2*i+3 + seed)) + i ^ (x >> 3); }
     *     public int applyAsInt(int x) { return m<n-1>(...m1(m0(x))); }
     * }
     * </pre>
     */
    static byte[] classFile(String name, int methods, int seed) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DataOutputStream out = new DataOutputStream(bytes);
        out.writeInt(0xCAFEBABE);
        out.writeShort(0);
        out.writeShort(52);
        // Constant pool: 13 fixed entries, then 3 per method (name, NameAndType, Methodref).
        out.writeShort(14 + 3 * methods);
        utf8(out, name); // 1
        classRef(out, 1); // 2
        utf8(out, "java/lang/Object"); // 3
        classRef(out, 3); // 4
        utf8(out, "java/util/function/IntUnaryOperator"); // 5
        classRef(out, 5); // 6
        utf8(out, "<init>"); // 7
        utf8(out, "()V"); // 8
        nameAndType(out, 7, 8); // 9
        methodRef(out, 4, 9); // 10
        utf8(out, "Code"); // 11
        utf8(out, "applyAsInt"); // 12
        utf8(out, "(I)I"); // 13
        for (int i = 0; i < methods; i++) {
            utf8(out, "m" + i); // 14 + 3i
            nameAndType(out, 14 + 3 * i, 13); // 15 + 3i
            methodRef(out, 2, 15 + 3 * i); // 16 + 3i
        }
        out.writeShort(0x0021); // public super
        out.writeShort(2);
        out.writeShort(4);
        out.writeShort(1);
        out.writeShort(6);
        out.writeShort(0); // fields
        out.writeShort(methods + 2);

        // public NAME() { super(); }
        method(out, 0x0001, 7, 8, 1, 1, new byte[] {0x2a, (byte) 0xb7, 0, 10, (byte) 0xb1});

        for (int i = 0; i < methods; i++) {
            int k = (2 * i + 3 + seed) & 0x7fff;
            byte[] code = {
                0x1a, // iload_0
                0x11, (byte) (k >> 8), (byte) k, // sipush k
                0x68, // imul
                0x11, (byte) (i >> 8), (byte) i, // sipush i
                0x60, // iadd
                0x1a, // iload_0
                0x06, // iconst_3
                0x7a, // ishr
                (byte) 0x82, // ixor
                (byte) 0xac, // ireturn
            };
            method(out, 0x0009, 14 + 3 * i, 13, 3, 1, code);
        }

        // public int applyAsInt(int x) { return m<n-1>(...(m0(x))); }
        ByteArrayOutputStream chain = new ByteArrayOutputStream();
        chain.write(0x1b); // iload_1
        for (int i = 0; i < methods; i++) {
            int ref = 16 + 3 * i;
            chain.write(0xb8); // invokestatic
            chain.write(ref >> 8);
            chain.write(ref);
        }
        chain.write(0xac); // ireturn
        method(out, 0x0001, 12, 13, 1, 2, chain.toByteArray());

        out.writeShort(0); // class attributes
        out.flush();
        return bytes.toByteArray();
    }

    static void utf8(DataOutputStream out, String s) throws IOException {
        out.writeByte(1);
        out.writeUTF(s);
    }

    static void classRef(DataOutputStream out, int name) throws IOException {
        out.writeByte(7);
        out.writeShort(name);
    }

    static void nameAndType(DataOutputStream out, int name, int type) throws IOException {
        out.writeByte(12);
        out.writeShort(name);
        out.writeShort(type);
    }

    static void methodRef(DataOutputStream out, int klass, int nat) throws IOException {
        out.writeByte(10);
        out.writeShort(klass);
        out.writeShort(nat);
    }

    static void method(DataOutputStream out, int flags, int name, int desc, int maxStack, int maxLocals, byte[] code)
            throws IOException {
        out.writeShort(flags);
        out.writeShort(name);
        out.writeShort(desc);
        out.writeShort(1); // attributes: Code
        out.writeShort(11);
        out.writeInt(12 + code.length);
        out.writeShort(maxStack);
        out.writeShort(maxLocals);
        out.writeInt(code.length);
        out.write(code);
        out.writeShort(0); // exception table
        out.writeShort(0); // Code attributes
    }
}
