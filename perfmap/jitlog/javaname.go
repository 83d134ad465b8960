package jitlog

import "github.com/jvmkit/jvmkit/internal/javaname"

// The Java-name rules live in internal/javaname; these names keep jitlog's API.

// NameOptions choose what JavaName prints besides "pkg.Class.method".
type NameOptions = javaname.Options

// MethodType is a parsed method descriptor, with Java type names.
type MethodType = javaname.MethodType

// ParseMethodDescriptor parses a JVM method descriptor such as "(I[Ljava/lang/Object;)V".
func ParseMethodDescriptor(desc string) (MethodType, error) {
	return javaname.ParseMethodDescriptor(desc)
}

// JavaClassName turns a JVM-internal class name into the Java form (see javaname.ClassName).
func JavaClassName(class string) string { return javaname.ClassName(class) }

// JavaName formats a method the way Java names it (see javaname.Name).
func JavaName(class, method, signature string, opts NameOptions) string {
	return javaname.Name(class, method, signature, opts)
}
