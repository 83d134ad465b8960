package elfsym

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/jvmkit/jvmkit/internal/testutil"
)

var update = flag.Bool("update", false, "rebuild testdata/seed*.so and FuzzOpen's malformed seeds from testdata/seed.c (needs gcc with -m32)")

func TestMain(m *testing.M) { testutil.Main(m) }

const libc = "/lib/x86_64-linux-gnu/libc.so.6"

// TestMatchesDebugELF reads the symbols and segments of glibc, every JDK's libjvm.so and the seed
// files, and requires debug/elf's answers, filtered as vmstructs and unwind filtered them when they
// read through debug/elf.
func TestMatchesDebugELF(t *testing.T) {
	files := []string{"testdata/seed64.so", "testdata/seed32.so"}
	if _, err := os.Stat(libc); err == nil {
		files = append(files, libc)
	} else if !testing.Short() {
		testutil.Skipf(t, "no glibc: %v", err)
	}
	if !testing.Short() {
		for _, jdk := range testutil.JDKs(t) {
			files = append(files, filepath.Join(jdk.Home, "lib/server/libjvm.so"))
		}
	}
	for _, file := range files {
		t.Run(file, func(t *testing.T) { compareDebugELF(t, file) })
	}
}

func compareDebugELF(t *testing.T, file string) {
	ef, err := elf.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	r, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	f, err := Open(r)
	if err != nil {
		t.Fatal(err)
	}

	var loads Segments
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD {
			loads = append(loads, p.ProgHeader)
		}
	}
	if diff := cmp.Diff(loads, f.Loads); diff != "" {
		t.Errorf("PT_LOAD segments (-debug/elf +elfsym):\n%s", diff)
	}

	dyn, err := ef.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	static, err := ef.Symbols()
	if err != nil && !errors.Is(err, elf.ErrNoSymbols) { // glibc is stripped
		t.Fatal(err)
	}
	want := map[string]uint64{}
	for _, c := range []struct {
		what string
		list []elf.Symbol
		data bool
	}{{"dynamic symbols", dyn, false}, {"dynamic and data symbols", static, true}} {
		for _, s := range c.list { // added to the previous case's
			typ := elf.ST_TYPE(s.Info)
			if c.data && typ != elf.STT_OBJECT && typ != elf.STT_TLS {
				continue
			}
			if _, dup := want[s.Name]; !dup && s.Name != "" && s.Value != 0 && s.Section != elf.SHN_UNDEF {
				want[s.Name] = s.Value
			}
		}
		start := time.Now()
		got, err := f.Symbols(c.data)
		t.Logf("%d %s in %v", len(got), c.what, time.Since(start))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-debug/elf +elfsym):\n%s", c.what, diff)
		}
	}

	// Defined: every defined symbol of either table (usdt's argument specs name them), the names with
	// two values ambiguous, as usdt built them from debug/elf.
	wantAll, wantAmbiguous := map[string]uint64{}, map[string]bool{}
	for _, list := range [][]elf.Symbol{static, dyn} {
		for _, s := range list {
			if s.Name == "" || s.Section == elf.SHN_UNDEF {
				continue
			}
			if old, ok := wantAll[s.Name]; ok && old != s.Value {
				wantAmbiguous[s.Name] = true
			}
			wantAll[s.Name] = s.Value
		}
	}
	all, ambiguous, err := f.Defined()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantAll, all); diff != "" {
		t.Errorf("defined symbols (-debug/elf +elfsym):\n%s", diff)
	}
	if diff := cmp.Diff(wantAmbiguous, ambiguous); diff != "" {
		t.Errorf("ambiguous symbols (-debug/elf +elfsym):\n%s", diff)
	}
	for _, p := range loads {
		if off, ok := f.Loads.Offset(p.Vaddr + p.Filesz/2); !ok || off != p.Off+p.Filesz/2 {
			t.Errorf("Offset(%#x) = %#x, %v; want %#x", p.Vaddr+p.Filesz/2, off, ok, p.Off+p.Filesz/2)
		}
		if p.Memsz > p.Filesz {
			if off, ok := f.Loads.Offset(p.Vaddr + p.Filesz); ok {
				t.Errorf("Offset(%#x) in bss = %#x", p.Vaddr+p.Filesz, off)
			}
		}
	}

	var wantFuncs Funcs
	seen := map[uint64]bool{}
	for _, list := range [][]elf.Symbol{static, dyn} {
		for _, s := range list {
			if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 && !seen[s.Value] {
				seen[s.Value] = true
				wantFuncs = append(wantFuncs, Func{Addr: s.Value, Size: s.Size, Name: s.Name})
			}
		}
	}
	start := time.Now()
	funcs, err := f.Funcs()
	t.Logf("%d functions in %v", len(funcs), time.Since(start))
	if err != nil {
		t.Fatal(err)
	}
	if len(funcs) == 0 {
		t.Fatal("no functions")
	}
	if diff := cmp.Diff(wantFuncs, funcs, cmp.Transformer("byAddr", func(fs Funcs) map[uint64]Func {
		m := map[uint64]Func{}
		for _, f := range fs {
			m[f.Addr] = f
		}
		return m
	})); diff != "" {
		t.Errorf("functions (-debug/elf +elfsym):\n%s", diff)
	}
	for i, fn := range funcs {
		if i > 0 && funcs[i-1].Addr >= fn.Addr {
			t.Fatalf("functions not sorted at %d: %#x then %#x", i, funcs[i-1].Addr, fn.Addr)
		}
		if j, ok := funcs.Find(fn.Addr); !ok || j != i {
			t.Fatalf("Find(%#x) = %d, %v; want %d (%s)", fn.Addr, j, ok, i, fn.Name)
		}
	}
}

// TestSeeds checks the seed files' symbols by name: both classes, every kind vmstructs and unwind
// look for.
func TestSeeds(t *testing.T) {
	for _, file := range []string{"testdata/seed64.so", "testdata/seed32.so"} {
		t.Run(file, func(t *testing.T) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			f, err := Open(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			dyn, err := f.Symbols(false)
			if err != nil {
				t.Fatal(err)
			}
			all, err := f.Symbols(true)
			if err != nil {
				t.Fatal(err)
			}
			funcs, err := f.Funcs()
			if err != nil {
				t.Fatal(err)
			}
			names := map[string]bool{}
			for _, fn := range funcs {
				names[fn.Name] = true
			}
			for _, c := range []struct {
				what string
				ok   bool
			}{
				{"dynamic counter", dyn["counter"] != 0},
				{"dynamic exported", dyn["exported"] != 0},
				{"no static hidden among the dynamic symbols", dyn["hidden"] == 0},
				{"data hidden", all["hidden"] != 0},
				{"data table", all["table"] != 0},
				{"no function among the data symbols", all["helper"] == 0},
				{"function exported", names["exported"]},
				{"function weak", names["weak"]},
				{"static function helper", names["helper"]},
			} {
				if !c.ok {
					t.Errorf("%s: missing", c.what)
				}
			}
		})
	}
}

func TestSegments(t *testing.T) {
	// libjvm-like: text at file offset 0x1000 (vaddr 0x1000), data at 0x5010 (vaddr 0x6010).
	s := Segments{
		{Type: elf.PT_LOAD, Flags: elf.PF_R, Off: 0, Vaddr: 0, Filesz: 0x800},
		{Type: elf.PT_LOAD, Flags: elf.PF_R | elf.PF_X, Off: 0x1000, Vaddr: 0x1000, Filesz: 0x3000},
		{Type: elf.PT_LOAD, Flags: elf.PF_R | elf.PF_W, Off: 0x5010, Vaddr: 0x6010, Filesz: 0x100},
	}
	for _, c := range []struct {
		off, addr uint64
		exec, ok  bool
	}{
		{0x10, 0x10, false, true},
		{0x1000, 0x1000, true, true},
		{0x3fff, 0x3fff, true, true},
		{0x4000, 0, false, false},
		{0x5020, 0x6020, false, true},
		{0x5110, 0, false, false},
	} {
		addr, exec, ok := s.Vaddr(c.off)
		if addr != c.addr || exec != c.exec || ok != c.ok {
			t.Errorf("Vaddr(%#x) = %#x, %v, %v; want %#x, %v, %v", c.off, addr, exec, ok, c.addr, c.exec, c.ok)
		}
	}
	if b, err := s.Bias(0x7f0000001000, 0x1000, 0x1000); err != nil || b != 0x7f0000000000 {
		t.Errorf("Bias of the text mapping = %#x, %v", b, err)
	}
	if b, err := s.Bias(0x7f0000006000, 0x5000, 0x1000); err != nil || b != 0x7f0000000000 {
		t.Errorf("Bias of the data mapping = %#x, %v", b, err)
	}
	if _, err := s.Bias(0x7f0000009000, 0x9000, 0x1000); err == nil {
		t.Error("Bias of a mapping at no segment's offset: no error")
	}
}

func TestFind(t *testing.T) {
	fs := Funcs{{Addr: 0x10, Size: 0x10, Name: "a"}, {Addr: 0x20, Name: "b"}, {Addr: 0x40, Size: 4, Name: "c"}}
	for _, c := range []struct {
		addr uint64
		want string
	}{{0x8, ""}, {0x10, "a"}, {0x1f, "a"}, {0x20, "b"}, {0x3f, "b"}, {0x43, "c"}, {0x44, ""}} {
		got := ""
		if i, ok := fs.Find(c.addr); ok {
			got = fs[i].Name
		}
		if got != c.want {
			t.Errorf("Find(%#x) = %q, want %q", c.addr, got, c.want)
		}
	}
}

// TestNotELF: what is no ELF file is an error, never a panic.
func TestNotELF(t *testing.T) {
	for _, b := range [][]byte{nil, []byte("\x7fELF"), []byte("#!/bin/sh\n")} {
		if _, err := Open(bytes.NewReader(b)); err == nil {
			t.Errorf("Open(%q): no error", b)
		}
	}
}

// FuzzOpen reads fuzzed ELF files (seeded with testdata/seed*.so and, in testdata/fuzz, broken
// copies of seed64.so): nothing may panic, functions stay sorted and findable.
func FuzzOpen(f *testing.F) {
	for _, file := range []string{"testdata/seed64.so", "testdata/seed32.so"} {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := Open(bytes.NewReader(b))
		if err != nil {
			return
		}
		_, _ = file.Symbols(true)
		_, _, _ = file.Defined()
		funcs, err := file.Funcs()
		if err != nil {
			return
		}
		for i, fn := range funcs {
			if i > 0 && funcs[i-1].Addr >= fn.Addr {
				t.Fatalf("functions not sorted at %d", i)
			}
			if _, ok := funcs.Find(fn.Addr); !ok {
				t.Fatalf("Find(%#x): not found", fn.Addr)
			}
		}
		for _, p := range file.Loads {
			_, _, _ = file.Loads.Vaddr(p.Off)
			_, _ = file.Loads.Bias(0x7f0000000000, p.Off&^0xfff, 0x1000)
		}
	})
}

// TestSeedCorpus rebuilds the seeds with -update: seed64.so and seed32.so from seed.c, and FuzzOpen's
// malformed copies of seed64.so (truncated; .symtab's string table link, size and offset out of
// range). Without -update it checks that the malformed seeds are there.
func TestSeedCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzOpen")
	if !*update {
		ents, err := os.ReadDir(dir)
		if err != nil || len(ents) == 0 {
			t.Fatalf("no seed corpus in %s (go test -run TestSeedCorpus -update): %v", dir, err)
		}
		return
	}
	gcc := testutil.MustHaveTool(t, "gcc")
	// Small: no page alignment, no build ID, no unwind tables.
	flags := []string{"-O1", "-shared", "-fPIC", "-nostdlib", "-fno-asynchronous-unwind-tables",
		"-Wl,--build-id=none", "-Wl,-z,max-page-size=0x10", "-Wl,-z,noseparate-code", "testdata/seed.c"}
	for _, c := range []struct{ out, m string }{{"testdata/seed64.so", "-m64"}, {"testdata/seed32.so", "-m32"}} {
		if out, err := exec.Command(gcc, append([]string{c.m, "-o", c.out}, flags...)...).CombinedOutput(); err != nil {
			t.Fatalf("gcc %s: %v\n%s", c.m, err, out)
		}
	}
	b, err := os.ReadFile("testdata/seed64.so")
	if err != nil {
		t.Fatal(err)
	}
	ef, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	symtab := -1
	for i, s := range ef.Sections {
		if s.Type == elf.SHT_SYMTAB {
			symtab = i
		}
	}
	if symtab < 0 {
		t.Fatal("seed64.so has no .symtab")
	}
	shdr := int(binary.LittleEndian.Uint64(b[0x28:])) + symtab*64 // Elf64_Shdr of .symtab
	patch := func(at int, v []byte) []byte {
		c := bytes.Clone(b)
		copy(c[at:], v)
		return c
	}
	seeds := map[string][]byte{
		"truncated":     b[:len(b)/2],
		"symtab-link":   patch(shdr+40, []byte{0xff, 0xff, 0, 0}),
		"symtab-size":   patch(shdr+32, []byte{0, 0, 0, 0x40, 0, 0, 0, 0}),
		"symtab-offset": patch(shdr+24, []byte{0, 0, 0, 0, 0, 0, 0, 0x10}),
		"phdrs-offset":  patch(0x20, []byte{0, 0, 0, 0, 0, 0, 0, 0x10}),
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, s := range seeds {
		if err := os.WriteFile(filepath.Join(dir, name), fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// BenchmarkSymbols reads what vmstructs.Open reads of libjvm (Symbols(false)), what it reads on a
// missing name (Symbols(true)), and what the unwinder reads (Funcs).
func BenchmarkSymbols(b *testing.B) {
	const lib = "/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so"
	r, err := os.Open(lib)
	if err != nil {
		b.Skip(err)
	}
	defer r.Close()
	for _, c := range []struct {
		name string
		read func(f *File) error
	}{
		{"dynamic", func(f *File) error { _, err := f.Symbols(false); return err }},
		{"data", func(f *File) error { _, err := f.Symbols(true); return err }},
		{"funcs", func(f *File) error { _, err := f.Funcs(); return err }},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				f, err := Open(r)
				if err == nil {
					err = c.read(f)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
