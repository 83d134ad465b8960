// Package javaname is the one home of the rules that turn the JVM's internal names into Java's:
// classes ("java/lang/String" is "java.lang.String", a hidden class "Foo$$Lambda+0x0000000801001234" is
// "Foo$$Lambda/0x0000000801001234" as Class.getName has it), array descriptors ("[B" is "byte[]"),
// method descriptors ("(I[Ljava/lang/Object;)V") and methods ("java.lang.String.indexOf", with
// parameter and return types as HotSpot's Method::external_name prints them).
//
// The rules are HotSpot's (Klass::external_name, Symbol::print_as_signature_external_*) and the JVM
// specification's (JVMS §4.2.1, §4.3); the functions are pure and fuzzed.
//
// # Compatibility
//
// Hidden classes (JDK 15+) carry "+0x<address>" in the JVM and "/0x<address>" in Java. JDK 9–14
// VM-anonymous classes have no suffix in the JVM; Java names them "Foo$$Lambda$1/0x<address of the
// InstanceKlass>" (vmstructs adds it), while JDK 11's JVMTI and JFR use the mirror's identity hash
// ("Foo$$Lambda$1/123456", as JDK 8 did everywhere).
package javaname
