package unwind

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/jvmkit/jvmkit/internal/testutil"
)

// cfiFiles are native libraries whose call frame information the walker meets: glibc and every JDK's
// libjvm and libjava.
func cfiFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"/lib/x86_64-linux-gnu/libc.so.6"}
	for _, jdk := range testutil.JDKs(t) {
		for _, lib := range []string{"lib/server/libjvm.so", "lib/libjava.so"} {
			files = append(files, filepath.Join(jdk.Home, lib))
		}
	}
	return files
}

var registerName = regexp.MustCompile(`(r\d+) \(\w+\)`)

// readelfRegs are readelf -wF's column names of the registers the unwinder follows.
var readelfRegs = map[string]int{"rbx": colBX, "rbp": colBP, "r13": colR13, "ra": colPC}

// TestCFIMatchesReadelf decodes the call frame information of glibc and libjvm at every row readelf
// (binutils) interprets in `readelf -wF`, and requires the same rules: the CFA, rbx, rbp, r13 and the
// return address.
func TestCFIMatchesReadelf(t *testing.T) {
	testutil.MustHaveTool(t, "readelf")
	for _, file := range cfiFiles(t) {
		t.Run(filepath.Base(filepath.Dir(file))+"/"+filepath.Base(file), func(t *testing.T) {
			f, err := elf.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			eh, err := readEhFrame(f)
			if err != nil {
				t.Fatal(err)
			}
			// readelf exits with 1 after warnings (a debug link it cannot follow), with its output complete.
			out, err := exec.Command("readelf", "-wF", file).Output()
			if len(out) == 0 {
				t.Fatalf("readelf -wF %s: %v", file, err)
			}
			rows, diffs := 0, 0
			var cols []string
			inCIE := false
			sc := bufio.NewScanner(bytes.NewReader(out))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				// "r10 (r10)": a register rule, one column.
				fields := strings.Fields(registerName.ReplaceAllString(sc.Text(), "$1"))
				switch {
				case len(fields) > 2 && fields[0] == "LOC" && fields[1] == "CFA":
					cols = fields[2:]
					continue
				case len(fields) > 3 && (fields[3] == "CIE" || fields[3] == "FDE"):
					inCIE = fields[3] == "CIE" // a CIE's own rows have no pc
					continue
				case len(fields) < 2 || len(fields[0]) != 16 || inCIE:
					continue
				}
				loc, err := strconv.ParseUint(fields[0], 16, 64)
				if err != nil {
					continue
				}
				row, err := eh.row(loc)
				if err != nil {
					t.Errorf("%#x: %v", loc, err)
					diffs++
					continue
				}
				rows++
				if d := cfaDiff(fields[1], row.CFA); d != "" {
					diffs++
					if diffs <= 10 {
						t.Errorf("%#x: CFA: %s", loc, d)
					}
				}
				for i, name := range cols {
					col, ok := readelfRegs[name]
					if !ok || 2+i >= len(fields) {
						continue
					}
					if d := ruleDiff(fields[2+i], row.Cols[col]); d != "" {
						diffs++
						if diffs <= 10 {
							t.Errorf("%#x: %s: %s", loc, name, d)
						}
					}
				}
			}
			t.Logf("%s: %d FDEs, %d rows compared with readelf, %d differ", file, len(eh.index), rows, diffs)
			if rows < 100 {
				t.Errorf("only %d rows compared", rows)
			}
		})
	}
}

func cfaDiff(want string, got cfiRule) string {
	if want == "exp" {
		if got.Kind != ruleCFAExpr {
			return "want an expression, got " + ruleString(got)
		}
		return ""
	}
	reg, off, ok := strings.Cut(want, "+")
	if !ok {
		reg, off, ok = strings.Cut(want, "-")
		off = "-" + off
	}
	n, err := strconv.ParseInt(off, 10, 64)
	if !ok || err != nil {
		return ""
	}
	num := map[string]uint8{"rsp": dwRSP, "rbp": dwRBP, "rbx": dwRBX, "rax": dwRAX}
	r, known := num[reg]
	if !known {
		return ""
	}
	if got.Kind != ruleCFAReg || got.Reg != r || got.Off != n {
		return "want " + want + ", got " + ruleString(got)
	}
	return ""
}

func ruleDiff(want string, got cfiRule) string {
	switch {
	case want == "u":
		if got.Kind != ruleSame && got.Kind != ruleUndefined {
			return "want no rule, got " + ruleString(got)
		}
	case want == "s":
		if got.Kind != ruleSame {
			return "want same value, got " + ruleString(got)
		}
	case want == "exp":
		if got.Kind != ruleExpr {
			return "want an expression, got " + ruleString(got)
		}
	case strings.HasPrefix(want, "r"):
		n, err := strconv.Atoi(want[1:])
		if err != nil {
			return ""
		}
		if got.Kind != ruleRegister || int(got.Reg) != n {
			return "want " + want + ", got " + ruleString(got)
		}
	case strings.HasPrefix(want, "c"):
		n, err := strconv.ParseInt(want[1:], 10, 64)
		if err != nil {
			return ""
		}
		if got.Kind != ruleOffset || got.Off != n {
			return "want " + want + ", got " + ruleString(got)
		}
	}
	return ""
}

func ruleString(r cfiRule) string {
	return "kind " + strconv.Itoa(int(r.Kind)) + " reg " + strconv.Itoa(int(r.Reg)) + " off " + strconv.FormatInt(r.Off, 10)
}

// TestCFIWithoutHeader indexes glibc's .eh_frame by scanning it, as for a file without
// .eh_frame_hdr, and requires the same rows as through the header's table.
func TestCFIWithoutHeader(t *testing.T) {
	f, err := elf.Open("/lib/x86_64-linux-gnu/libc.so.6")
	if err != nil {
		testutil.Skipf(t, "no glibc: %v", err)
	}
	defer f.Close()
	sec := f.Section(".eh_frame")
	data, err := sec.Data()
	if err != nil {
		t.Fatal(err)
	}
	hdr, err := readEhFrame(f)
	if err != nil {
		t.Fatal(err)
	}
	scan, err := parseEhFrame(data, sec.Addr, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(scan.index) != len(hdr.index) {
		t.Fatalf("%d FDEs by scanning, %d in the header", len(scan.index), len(hdr.index))
	}
	for i := 0; i < len(hdr.index); i += 7 {
		pc := hdr.index[i].pc + 3
		a, errA := hdr.row(pc)
		b, errB := scan.row(pc)
		if (errA == nil) != (errB == nil) || !reflect.DeepEqual(a, b) {
			t.Fatalf("%#x: %+v %v vs %+v %v", pc, a, errA, b, errB)
		}
	}
}

// TestCFIStep unwinds hand-made frames: a frame after "push rbp; mov rbp, rsp", a PLT entry's CFA
// expression, and a signal frame whose registers are saved in memory.
func TestCFIStep(t *testing.T) {
	mem := map[uint64]uint64{}
	read := func(a uint64) (uint64, error) {
		v, ok := mem[a]
		if !ok {
			return 0, errors.New("unmapped")
		}
		return v, nil
	}
	var cur nativeRegs
	cur.set(colPC, 0x1000)
	cur.set(colSP, 0x7000)
	cur.set(colBP, 0x7010)
	cur.set(colBX, 0xb)
	// CFA = rbp+16, rbp at CFA-16, ra at CFA-8.
	row := cfiRow{CFA: cfiRule{Kind: ruleCFAReg, Reg: dwRBP, Off: 16}}
	row.Cols[colBP] = cfiRule{Kind: ruleOffset, Off: -16}
	row.Cols[colPC] = cfiRule{Kind: ruleOffset, Off: -8}
	mem[0x7010], mem[0x7018] = 0x7100, 0x2000
	next, outer, err := row.step(cur, read)
	if err != nil || outer {
		t.Fatal(err, outer)
	}
	if next.v[colPC] != 0x2000 || next.v[colSP] != 0x7020 || next.v[colBP] != 0x7100 || next.v[colBX] != 0xb {
		t.Errorf("frame pointer frame: %+v", next)
	}
	// The PLT: CFA = rsp + 8 + ((rip & 15) >= 11) << 3.
	plt := []byte{0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22}
	row = cfiRow{CFA: cfiRule{Kind: ruleCFAExpr, Expr: plt}}
	row.Cols[colPC] = cfiRule{Kind: ruleOffset, Off: -8}
	for _, c := range []struct{ pc, cfa uint64 }{{0x1000, 0x7008}, {0x100b, 0x7010}} {
		cur.set(colPC, c.pc)
		mem[c.cfa-8] = 0x3000
		next, _, err := row.step(cur, read)
		if err != nil || next.v[colSP] != c.cfa || next.v[colPC] != 0x3000 {
			t.Errorf("plt at %#x: %+v %v, want CFA %#x", c.pc, next, err, c.cfa)
		}
	}
	// A signal frame: CFA = *(rsp+160), registers at rsp+offsets (glibc's __restore_rt).
	row = cfiRow{CFA: cfiRule{Kind: ruleCFAExpr, Expr: []byte{0x77, 0xa0, 0x01, 0x06}}, Signal: true}
	row.Cols[colPC] = cfiRule{Kind: ruleExpr, Expr: []byte{0x77, 0xa8, 0x01}}
	row.Cols[colSP] = cfiRule{Kind: ruleExpr, Expr: []byte{0x77, 0xa0, 0x01}}
	row.Cols[colBP] = cfiRule{Kind: ruleExpr, Expr: []byte{0x77, 0xf8, 0x00}}
	cur.set(colSP, 0x8000)
	mem[0x8000+160], mem[0x8000+168], mem[0x8000+120] = 0x9000, 0x4444, 0x9100
	next, _, err = row.step(cur, read)
	if err != nil || next.v[colSP] != 0x9000 || next.v[colPC] != 0x4444 || next.v[colBP] != 0x9100 {
		t.Errorf("signal frame: %+v %v", next, err)
	}
	// An undefined return address: the outermost frame.
	row = cfiRow{CFA: cfiRule{Kind: ruleCFAReg, Reg: dwRSP, Off: 8}}
	row.Cols[colPC] = cfiRule{Kind: ruleUndefined}
	if _, outer, err := row.step(cur, read); err != nil || !outer {
		t.Errorf("undefined return address: outermost %v, %v", outer, err)
	}
}

// FuzzEhFrame parses fuzzed .eh_frame sections (seeded with glibc's first entries) and looks up rows
// and runs expressions: nothing may panic or loop.
func FuzzEhFrame(f *testing.F) {
	if lib, err := elf.Open("/lib/x86_64-linux-gnu/libc.so.6"); err == nil {
		if b, err := lib.Section(".eh_frame").Data(); err == nil {
			f.Add(b[:min(len(b), 4096)], uint64(0x26010), []byte{0x77, 8, 0x06})
		}
		lib.Close()
	}
	f.Add([]byte{}, uint64(0), []byte{})
	var cie bytes.Buffer
	// A CIE "zR" (pcrel sdata4), then an FDE for [0x40, 0x80) with "advance 4; def_cfa_offset 16".
	cie.Write([]byte{0x14, 0, 0, 0, 0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78, 0x10, 1, 0x1b, 0x0c, 0x07, 0x08, 0x90, 0x01, 0, 0})
	fde := []byte{0x14, 0, 0, 0, 0x1c, 0, 0, 0, 0, 0, 0, 0, 0x40, 0, 0, 0, 0, 0x44, 0x0e, 0x10, 0, 0, 0, 0}
	binary.LittleEndian.PutUint32(fde[8:], uint32(0x40-(0x18+8)))
	cie.Write(fde)
	f.Add(cie.Bytes(), uint64(0x45), []byte{0x30, 0x31, 0x22})
	f.Fuzz(func(t *testing.T, data []byte, pc uint64, expr []byte) {
		if e, err := parseEhFrame(data, 0, nil, 0); err == nil {
			for _, p := range []uint64{pc, pc + 1, 0x40, 0x45} {
				if row, err := e.row(p); err == nil {
					var cur nativeRegs
					cur.set(colPC, p)
					cur.set(colSP, 0x1000)
					_, _, _ = row.step(cur, func(uint64) (uint64, error) { return 0x1008, nil })
				}
			}
		}
		var regs nativeRegs
		regs.set(colSP, 0x1000)
		_, _ = evalExpr(expr, regs, func(a uint64) (uint64, error) { return a + 8, nil }, &pc)
	})
}
