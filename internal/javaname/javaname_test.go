package javaname_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/jvmkit/jvmkit/internal/javaname"
)

func TestName(t *testing.T) {
	all := javaname.Options{Params: true, Return: true}
	params := javaname.Options{Params: true}
	for _, c := range []struct {
		class, method, sig string
		opts               javaname.Options
		want               string
	}{
		{"java/lang/String", "hashCode", "()I", javaname.Options{}, "java.lang.String.hashCode"},
		{"java/lang/String", "hashCode", "()I", params, "java.lang.String.hashCode()"},
		{"java/lang/String", "hashCode", "()I", all, "int java.lang.String.hashCode()"},
		{"Foo", "bar", "(I[Ljava/lang/Object;)V", params, "Foo.bar(int, java.lang.Object[])"},
		{"Foo", "bar", "(I[Ljava/lang/Object;)V", javaname.Options{Return: true}, "void Foo.bar"},
		// As Compiler.perfmap names them (HotSpot's Method::external_name).
		{"java/util/HashMap", "merge", "(Ljava/lang/Object;Ljava/lang/Object;Ljava/util/function/BiFunction;)Ljava/lang/Object;", all,
			"java.lang.Object java.util.HashMap.merge(java.lang.Object, java.lang.Object, java.util.function.BiFunction)"},
		{"Burn", "h", "(I)D", all, "double Burn.h(int)"},
		{"A", "m", "(BCDFIJSZ[[J[[[LA$B;)[[Z", all, "boolean[][] A.m(byte, char, double, float, int, long, short, boolean, long[][], A$B[][][])"},
		{"java/lang/Object", "<init>", "()V", all, "void java.lang.Object.<init>()"},
		// Hidden classes: the last '+' before an address becomes '/', as Class.getName has it.
		{"Burn$$Lambda+0x0000000801001234", "run", "()V", params, "Burn$$Lambda/0x0000000801001234.run()"},
		{"java/lang/invoke/LambdaForm$MH+0x0000000800c03000", "invoke", "(Ljava/lang/Object;)Ljava/lang/Object;", params,
			"java.lang.invoke.LambdaForm$MH/0x0000000800c03000.invoke(java.lang.Object)"},
		{"a+b", "m", "()V", params, "a+b.m()"},
		// A signature cut short by a probe's string limit: kept as it is.
		{"Foo", "bar", "(I[Ljava/lang/Obj", params, "Foo.bar(I[Ljava/lang/Obj"},
		{"Foo", "bar", "", all, "Foo.bar"},
		{"Foo", "bar", "garbage", javaname.Options{}, "Foo.bar"},
	} {
		if got := javaname.Name(c.class, c.method, c.sig, c.opts); got != c.want {
			t.Errorf("JavaName(%q, %q, %q, %+v) = %q, want %q", c.class, c.method, c.sig, c.opts, got, c.want)
		}
	}
}

func TestParseMethodDescriptor(t *testing.T) {
	mt, err := javaname.ParseMethodDescriptor("(I[Ljava/lang/Object;)V")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(javaname.MethodType{Params: []string{"int", "java.lang.Object[]"}, Return: "void"}, mt); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, bad := range []string{"", "I", "(", "(I", "()", "()VV", "(V)V", "(L;)V", "(Ljava/lang/String)V", "([)V",
		"(Q)V", "()II", "(La.b;)V", "(" + strings.Repeat("[", 256) + "I)V", "(L(;)V"} {
		if mt, err := javaname.ParseMethodDescriptor(bad); err == nil {
			t.Errorf("ParseMethodDescriptor(%q) = %+v, want an error", bad, mt)
		}
	}
	if _, err := javaname.ParseMethodDescriptor("(" + strings.Repeat("[", 255) + "I)V"); err != nil {
		t.Errorf("255 dimensions: %v", err)
	}
}

func FuzzName(f *testing.F) {
	f.Add("java/lang/String", "hashCode", "(I[Ljava/lang/Object;)V")
	f.Add("Burn$$Lambda+0x0000000801001234", "run", "()[[Ljava/lang/String;")
	f.Add("", "", "(")
	f.Fuzz(func(t *testing.T, class, method, sig string) {
		plain := javaname.Name(class, method, sig, javaname.Options{})
		full := javaname.Name(class, method, sig, javaname.Options{Params: true, Return: true})
		mt, err := javaname.ParseMethodDescriptor(sig)
		if err != nil {
			if full != plain+sig {
				t.Fatalf("bad descriptor %q: %q, want %q", sig, full, plain+sig)
			}
			return
		}
		if mt.Return == "" {
			t.Fatalf("%q: no return type", sig)
		}
		want := mt.Return + " " + plain + "(" + strings.Join(mt.Params, ", ") + ")"
		if full != want {
			t.Fatalf("%q: %q, want %q", sig, full, want)
		}
		for _, p := range append(mt.Params, mt.Return) {
			if p == "" || strings.ContainsAny(p, "/;(") {
				t.Fatalf("%q: type %q", sig, p)
			}
		}
	})
}
