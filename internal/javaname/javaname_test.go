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

func TestClassName(t *testing.T) {
	for in, want := range map[string]string{
		"java/lang/String":                   "java.lang.String",
		"Foo$$Lambda+0x0000000800c01234":     "Foo$$Lambda/0x0000000800c01234",
		"a/b/C+D":                            "a.b.C+D",
		"a/b/C+0x":                           "a.b.C+0x",
		"java/lang/invoke/LambdaForm$MH+0x1": "java.lang.invoke.LambdaForm$MH/0x1",
	} {
		if got := javaname.ClassName(in); got != want {
			t.Errorf("ClassName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTypeName(t *testing.T) {
	for in, want := range map[string]string{
		"java/lang/String":                  "java.lang.String",
		"[B":                                "byte[]",
		"[[Ljava/lang/Object;":              "java.lang.Object[][]",
		"Foo$$Lambda+0x0000000800c01234":    "Foo$$Lambda/0x0000000800c01234",
		"[LFoo$$Lambda+0x0000000800c01234;": "Foo$$Lambda/0x0000000800c01234[]",
		"[Q":                                "[Q",
		"":                                  "",
	} {
		if got := javaname.TypeName(in); got != want {
			t.Errorf("TypeName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestQualified(t *testing.T) {
	for in, want := range map[string]string{
		"int java.lang.String.indexOf(int, int)":       "java.lang.String.indexOf",
		"void Unwind.<init>()":                         "Unwind.<init>",
		"java.lang.String[] Foo$Bar.baz()":             "Foo$Bar.baz",
		"void Unwind$$Lambda/0x0000000022041228.run()": "Unwind$$Lambda/0x0000000022041228.run",
		"java.lang.String.indexOf":                     "java.lang.String.indexOf",
		"":                                             "",
	} {
		if got := javaname.Qualified(in); got != want {
			t.Errorf("Qualified(%q) = %q, want %q", in, got, want)
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
			// A '/' only before a hidden class's address.
			if p == "" || strings.ContainsAny(p, ";(") || strings.Count(p, "/") != strings.Count(p, "/0x") {
				t.Fatalf("%q: type %q", sig, p)
			}
		}
	})
}

func FuzzTypeName(f *testing.F) {
	for _, s := range []string{"[B", "[[Ljava/lang/Object;", "Foo$$Lambda+0x0000000800c01234", "[L;", "a/b/C+D"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := javaname.TypeName(s)
		if !strings.HasPrefix(s, "[") && got != javaname.ClassName(s) {
			t.Fatalf("TypeName(%q) = %q, not its class name", s, got)
		}
		// Slashes become dots; a '/' is left only before a hidden class's address.
		if strings.Count(got, "/") != strings.Count(got, "/0x") {
			t.Fatalf("TypeName(%q) = %q", s, got)
		}
	})
}
