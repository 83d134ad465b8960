package usdt

import (
	"debug/elf"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseArgX86(t *testing.T) {
	for _, tc := range []struct {
		spec   string
		want   Arg
		format string // "" when Format prints spec back
	}{
		{"-4@%eax", Arg{Kind: ArgReg, Size: 4, Signed: true, Reg: "eax"}, ""},
		{"8@%r12", Arg{Kind: ArgReg, Size: 8, Reg: "r12"}, ""},
		{"-4@%r15d", Arg{Kind: ArgReg, Size: 4, Signed: true, Reg: "r15d"}, ""},
		{"1@%dil", Arg{Kind: ArgReg, Size: 1, Reg: "dil"}, ""},
		{"1@%ah", Arg{Kind: ArgReg, Size: 1, Reg: "ah"}, ""},
		{"2@%r8w", Arg{Kind: ArgReg, Size: 2, Reg: "r8w"}, ""},
		{"-1@%r15b", Arg{Kind: ArgReg, Size: 1, Signed: true, Reg: "r15b"}, ""},
		{"4f@%eax", Arg{Kind: ArgReg, Size: 4, Float: true, Reg: "eax"}, ""},
		{"-4@$-1", Arg{Kind: ArgConst, Size: 4, Signed: true, Value: -1}, ""},
		{"1@$-56", Arg{Kind: ArgConst, Size: 1, Value: -56}, ""},
		{"-8@$20015998343868", Arg{Kind: ArgConst, Size: 8, Signed: true, Value: 20015998343868}, ""},
		{"8@$0x10", Arg{Kind: ArgConst, Size: 8, Value: 16}, "8@$16"},
		{"8@152(%rdi)", Arg{Kind: ArgMem, Size: 8, Reg: "rdi", Value: 152}, ""},
		{"-4@-144(%rbp)", Arg{Kind: ArgMem, Size: 4, Signed: true, Reg: "rbp", Value: -144}, ""},
		{"-8@(%rdi)", Arg{Kind: ArgMem, Size: 8, Signed: true, Reg: "rdi"}, ""},
		{"-5@%eax", Arg{}, ""},
		{"-8@(%rdi,%rsi,8)", Arg{Kind: ArgMem, Size: 8, Signed: true, Reg: "rdi", Index: "rsi", Scale: 8}, ""},
		{"-4@4(%rdx,%rsi,4)", Arg{Kind: ArgMem, Size: 4, Signed: true, Reg: "rdx", Index: "rsi", Scale: 4, Value: 4}, ""},
		{"8@(%rax,%rbx)", Arg{Kind: ArgMem, Size: 8, Reg: "rax", Index: "rbx", Scale: 1}, "8@(%rax,%rbx,1)"},
		{"8@16(,%rcx,2)", Arg{Kind: ArgMem, Size: 8, Index: "rcx", Scale: 2, Value: 16}, ""},
		{"-4@glob(%rip)", Arg{Kind: ArgMem, Size: 4, Signed: true, Reg: "rip", Symbol: "glob"}, ""},
		{"-8@16+garr(%rip)", Arg{Kind: ArgMem, Size: 8, Signed: true, Reg: "rip", Symbol: "garr", Value: 16}, "-8@garr+16(%rip)"},
		{"-8@garr+16(%rip)", Arg{Kind: ArgMem, Size: 8, Signed: true, Reg: "rip", Symbol: "garr", Value: 16}, ""},
		{"4@x.1-4(%rip)", Arg{Kind: ArgMem, Size: 4, Reg: "rip", Symbol: "x.1", Value: -4}, ""},
		{"8@garr(,%rax,8)", Arg{Kind: ArgMem, Size: 8, Index: "rax", Scale: 8, Symbol: "garr"}, ""},
		{"8@glob", Arg{Kind: ArgMem, Size: 8, Symbol: "glob"}, ""},
		{"8@4096", Arg{Kind: ArgMem, Size: 8, Value: 4096}, ""},
		{"%rax", Arg{Kind: ArgReg, Size: 8, Reg: "rax"}, "8@%rax"},
	} {
		a, err := ParseArg(elf.EM_X86_64, tc.spec)
		if tc.want.Kind == 0 {
			if err == nil {
				t.Errorf("%q: parsed as %+v, want an error", tc.spec, a)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.spec, err)
			continue
		}
		if diff := cmp.Diff(tc.want, a); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tc.spec, diff)
		}
		want := tc.format
		if want == "" {
			want = tc.spec
		}
		if got := a.Format(elf.EM_X86_64); got != want {
			t.Errorf("%q: Format = %q, want %q", tc.spec, got, want)
		}
	}
}

func TestParseArgARM64(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want Arg
	}{
		{"-4@w0", Arg{Kind: ArgReg, Size: 4, Signed: true, Reg: "w0"}},
		{"8@x19", Arg{Kind: ArgReg, Size: 8, Reg: "x19"}},
		{"8@sp", Arg{Kind: ArgReg, Size: 8, Reg: "sp"}},
		{"8@[sp, 16]", Arg{Kind: ArgMem, Size: 8, Reg: "sp", Value: 16}},
		{"-4@[x29, -8]", Arg{Kind: ArgMem, Size: 4, Signed: true, Reg: "x29", Value: -8}},
		{"8@[x0]", Arg{Kind: ArgMem, Size: 8, Reg: "x0"}},
		{"-4@-1", Arg{Kind: ArgConst, Size: 4, Signed: true, Value: -1}},
		{"8@42", Arg{Kind: ArgConst, Size: 8, Value: 42}},
	} {
		a, err := ParseArg(elf.EM_AARCH64, tc.spec)
		if err != nil {
			t.Errorf("%q: %v", tc.spec, err)
			continue
		}
		if diff := cmp.Diff(tc.want, a); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tc.spec, diff)
		}
		if got := a.Format(elf.EM_AARCH64); got != tc.spec {
			t.Errorf("%q: Format = %q", tc.spec, got)
		}
	}
	args, err := ParseArgs(elf.EM_AARCH64, "8@[x29, -8] -4@w1  8@[sp, 16]")
	if err != nil || len(args) != 3 {
		t.Errorf("ParseArgs with spaces in brackets: %v, %v", args, err)
	}
}

func TestParseArgErrors(t *testing.T) {
	for _, tc := range []struct {
		machine elf.Machine
		spec    string
		want    string
	}{
		{elf.EM_X86_64, "3@%eax", "size"},
		{elf.EM_X86_64, "1f@%al", "float"},
		{elf.EM_X86_64, "8@%foo", "unknown register"},
		{elf.EM_X86_64, "8@%xmm0", "pt_regs"},
		{elf.EM_X86_64, "8@(%eax)", "64-bit"},
		{elf.EM_X86_64, "8@16(%rip)", "symbol"},
		{elf.EM_X86_64, "8@(%rax,%rbx,3)", "scale"},
		{elf.EM_X86_64, "8@(%rax", "parenthes"},
		{elf.EM_X86_64, "8@()", "empty"},
		{elf.EM_X86_64, "8@$x", "number"},
		{elf.EM_X86_64, "8@$1_000", "number"},
		{elf.EM_X86_64, "8@a+b(%rip)", "one symbol"},
		{elf.EM_X86_64, "8@", "no operand"},
		{elf.EM_AARCH64, "8@[w0, 8]", "64-bit"},
		{elf.EM_AARCH64, "8@[x0, 8", "bracket"},
		{elf.EM_AARCH64, "8@v0", "pt_regs"},
		{elf.EM_RISCV, "8@a0", "not supported"},
	} {
		_, err := ParseArg(tc.machine, tc.spec)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %q: error %v, want one about %q", tc.machine, tc.spec, err, tc.want)
		}
	}
	if _, err := ParseArgs(elf.EM_AARCH64, "8@[x0 8@x1"); err == nil {
		t.Error("unbalanced brackets accepted")
	}
}

func TestNormalize(t *testing.T) {
	for _, tc := range []struct {
		a    Arg
		in   uint64
		want uint64
	}{
		{Arg{Size: 1, Signed: true}, 0xff, ^uint64(0)},
		{Arg{Size: 1}, 0x1234ff, 0xff},
		{Arg{Size: 2, Signed: true}, 0x8000, 0xffffffffffff8000},
		{Arg{Size: 4, Signed: true}, 0xdeadbeef_7fffffff, 0x7fffffff},
		{Arg{Size: 4}, 0xdeadbeef_ffffffff, 0xffffffff},
		{Arg{Size: 4, Float: true, Signed: true}, 0xdeadbeef_ffffffff, 0xffffffff},
		{Arg{Size: 8, Signed: true}, 0x8000000000000000, 0x8000000000000000},
	} {
		if got := tc.a.normalize(tc.in); got != tc.want {
			t.Errorf("%+v normalize(%#x) = %#x, want %#x", tc.a, tc.in, got, tc.want)
		}
	}
}

// FuzzParseArg checks that no spec panics the parser, and that what parses formats to a spec that parses
// to the same Arg.
func FuzzParseArg(f *testing.F) {
	for _, s := range []string{
		"-4@%eax", "8@%r12", "1@%dil", "-4@$-1", "8@152(%rdi)", "-4@-144(%rbp)", "-8@(%rdi,%rsi,8)",
		"-4@4(%rdx,%rsi,4)", "-8@16+garr(%rip)", "8@garr(,%rax,8)", "4f@%eax", "8@[x29, -8]", "-4@w0", "8@42",
	} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, spec string, x86 bool) {
		m := elf.EM_AARCH64
		if x86 {
			m = elf.EM_X86_64
		}
		a, err := ParseArg(m, spec)
		_, _ = ParseArgs(m, spec)
		if err != nil {
			return
		}
		if a.Size != 1 && a.Size != 2 && a.Size != 4 && a.Size != 8 {
			t.Fatalf("%q: size %d", spec, a.Size)
		}
		s := a.Format(m)
		b, err := ParseArg(m, s)
		if err != nil {
			t.Fatalf("%q formats as %q, which does not parse: %v", spec, s, err)
		}
		if diff := cmp.Diff(a, b); diff != "" {
			t.Fatalf("%q formats as %q, which parses differently (-first +second):\n%s", spec, s, diff)
		}
	})
}
