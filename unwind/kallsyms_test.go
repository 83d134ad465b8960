package unwind

import (
	"os"
	"strings"
	"testing"

	"github.com/jvmkit/jvmkit/internal/testutil"
)

const kallsymsSample = `ffffffff81000000 T srso_alias_untrain_ret
ffffffff81000000 T _stext
ffffffff81001000 t helper_fn
ffffffff81002000 D some_data
0000000000000000 T hidden_from_this_reader
ffffffff81003000 W weak_fn
ffffffffc0000000 t mod_fn	[kvm]
ffffffff81000800 T between
garbage line
zz T badaddr
`

// TestParseKallsyms keeps text symbols with an address, sorted, the first listed at an address,
// and names them without their module.
func TestParseKallsyms(t *testing.T) {
	syms, names := parseKallsyms([]byte(kallsymsSample))
	var got []string
	for _, s := range syms {
		got = append(got, names[s.off:s.off+s.n])
	}
	want := "srso_alias_untrain_ret between helper_fn weak_fn mod_fn"
	if strings.Join(got, " ") != want {
		t.Errorf("symbols %q, want %q", got, want)
	}
	k := &KernelSymbols{syms: syms, names: names}
	k.once.Do(func() {}) // loaded
	for pc, want := range map[uint64]string{0xffffffff81000010: "srso_alias_untrain_ret", 0xffffffff81000900: "between",
		0xffffffff81002100: "helper_fn", 0xffffffffc0000004: "mod_fn"} {
		if name, mod, ok := k.Symbolize(pc); !ok || name != want || mod != "[kernel.kallsyms]" {
			t.Errorf("Symbolize(%#x) = %q, %q, %v; want %q", pc, name, mod, ok, want)
		}
	}
	if _, _, ok := k.Symbolize(0x1000); ok {
		t.Error("Symbolize below the first symbol: ok")
	}
}

// TestKallsymsLive reads this machine's /proc/kallsyms (as root it has addresses): every text symbol
// of a simple line-by-line reading is found by address with its own name or another at that address.
func TestKallsymsLive(t *testing.T) {
	testutil.MustHaveRoot(t) // others read zero addresses
	b, err := os.ReadFile("/proc/kallsyms")
	if err != nil {
		t.Fatal(err)
	}
	k := &KernelSymbols{}
	n := 0
	byAddr := map[string][]string{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && strings.Contains("tTwW", f[1]) && len(f[1]) == 1 && strings.Trim(f[0], "0") != "" {
			byAddr[f[0]] = append(byAddr[f[0]], f[2])
		}
	}
	for addr, want := range byAddr {
		var pc uint64
		for _, c := range addr {
			pc = pc<<4 | uint64(strings.IndexRune("0123456789abcdef", c))
		}
		name, _, ok := k.Symbolize(pc)
		if !ok || !strings.Contains(" "+strings.Join(want, " ")+" ", " "+name+" ") {
			t.Fatalf("Symbolize(%s) = %q, %v; want one of %q", addr, name, ok, want)
		}
		n++
	}
	t.Logf("%d addresses of %d text symbols, %d bytes of names", n, len(k.syms), len(k.names))
}

func FuzzParseKallsyms(f *testing.F) {
	f.Add([]byte(kallsymsSample))
	f.Add([]byte("ffffffff81000000 T a\nffffffff81000000 t b"))
	f.Fuzz(func(t *testing.T, b []byte) {
		syms, names := parseKallsyms(b)
		for i, s := range syms {
			if int(s.off)+int(s.n) > len(names) || i > 0 && syms[i-1].addr >= s.addr || s.addr == 0 {
				t.Fatalf("symbol %d %+v of %d names bytes", i, s, len(names))
			}
		}
	})
}
