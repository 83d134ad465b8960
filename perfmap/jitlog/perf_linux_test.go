package jitlog_test

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/jvmkit/jvmkit/internal/testutil"
	"github.com/jvmkit/jvmkit/perfmap/jitlog"
)

// jitdumpHelper is the process that perf records in TestPerfInject: a recorder outside the "JIT"
// process. It maps its own jit-<pid>.dump, runs testdata/selfjit (which reports its code as it
// installs it), logs the two loads, and writes CODE_LOAD records carrying selfjit's pid: live, with the
// code read from selfjit, in mode "live"; from the log afterwards, with zeros, in mode "log" (as
// WriteJitdump exports a log).
func jitdumpHelper() int {
	if err := runJitdumpHelper(os.Getenv("JITLOG_TEST_DIR"), os.Getenv("JITLOG_TEST_PROG"), os.Getenv("JITLOG_TEST_MODE")); err != nil {
		fmt.Fprintln(os.Stderr, "jitdump helper:", err)
		return 1
	}
	return 0
}

func runJitdumpHelper(dir, prog, mode string) error {
	jf, err := jitlog.CreateJitdump(dir, jitlog.JitdumpOptions{})
	if err != nil {
		return err
	}
	defer jf.Close()
	lw, err := jitlog.Create(filepath.Join(dir, "jit.log"), jitlog.WriterOptions{})
	if err != nil {
		return err
	}
	defer lw.Close()
	cmd := exec.Command(prog, "300")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	defer cmd.Wait()
	pid := cmd.Process.Pid
	sc := bufio.NewScanner(out)
	var addr, size uint64
	var recs []jitlog.Record
	for i, name := range []string{"first", "second"} {
		if !sc.Scan() {
			return fmt.Errorf("selfjit said nothing: %w", sc.Err())
		}
		f := strings.Fields(sc.Text())
		if i == 0 {
			if len(f) != 3 {
				return fmt.Errorf("selfjit said %q", sc.Text())
			}
			addr, _ = strconv.ParseUint(f[0], 16, 64)
			size, _ = strconv.ParseUint(f[1], 10, 64)
			f = f[2:]
		}
		t, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return fmt.Errorf("selfjit said %q", sc.Text())
		}
		rec := jitlog.Record{Time: t, PID: pid, Kind: jitlog.Load, Start: addr, Size: size, Name: name, Source: "selfjit"}
		if mode == "log" && i == 0 {
			// As a snapshot: valid since the beginning, exported with timestamp 0.
			rec.Kind = jitlog.Snapshot
		}
		recs = append(recs, rec)
		if err := lw.Append(rec); err != nil {
			return err
		}
		if err := lw.Flush(); err != nil {
			return err
		}
		if mode == "live" {
			code, err := jitlog.ReadCode(pid, addr, size)
			if err != nil {
				return err
			}
			if err := jf.CodeLoad(jitlog.CodeLoad{Time: t, PID: pid, TID: pid, Addr: addr, Size: size, Name: name, Code: code}); err != nil {
				return err
			}
			if err := jf.Flush(); err != nil {
				return err
			}
		}
	}
	if !sc.Scan() {
		return fmt.Errorf("selfjit did not finish: %w", sc.Err())
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("selfjit: %w", err)
	}
	if mode == "log" {
		if err := jitlog.NewResolver(recs).WriteJitdump(jf.JitdumpWriter, pid); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, "result"), fmt.Appendf(nil, "%d %x %d %d\n", pid, addr, size, recs[1].Time), 0o644)
}

// TestPerfInject records selfjit, whose code at one address is replaced mid-run, and checks that perf
// inject --jit with the helper's jitdump names every sample of that code as Symbolize names it from
// the log, "first" before the switch and "second" after.
func TestPerfInject(t *testing.T) {
	perf := testutil.MustHaveTool(t, "perf")
	cc := testutil.MustHaveTool(t, "gcc")
	bin := filepath.Join(t.TempDir(), "selfjit")
	if out, err := exec.Command(cc, "-O2", "-Wall", "-o", bin, filepath.Join("testdata", "selfjit", "selfjit.c")).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	for _, mode := range []string{"live", "log"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			// perf keeps build ids under $HOME/.debug; keep ours in the test's directory.
			env := append(os.Environ(), "HOME="+dir, "PERF_BUILDID_DIR="+filepath.Join(dir, "buildid"))
			run := func(args ...string) []byte {
				t.Helper()
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				cmd := exec.CommandContext(ctx, perf, args...)
				cmd.Env = append(env, helperEnv+"=jitdump", "JITLOG_TEST_DIR="+dir, "JITLOG_TEST_PROG="+bin, "JITLOG_TEST_MODE="+mode)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("perf %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
				}
				return out
			}
			data := filepath.Join(dir, "perf.data")
			run("record", "-q", "-k", "mono", "-e", "cpu-clock", "-F", "1999", "-g", "-N", "-o", data, "--", os.Args[0], "-test.run=^$")
			res, err := os.ReadFile(filepath.Join(dir, "result"))
			if err != nil {
				t.Fatalf("the helper left no result: %v", err)
			}
			var pid int
			var addr, size, tSwitch uint64
			if _, err := fmt.Sscanf(string(res), "%d %x %d %d", &pid, &addr, &size, &tSwitch); err != nil {
				t.Fatalf("result %q: %v", res, err)
			}
			injected := filepath.Join(dir, "perf.jit.data")
			run("inject", "--jit", "-i", data, "-o", injected)
			fields := []string{"script", "-F", "comm,pid,tid,time,period,event,ip,sym,dso", "--ns", "-i"}
			plain := run(append(fields, data)...)
			viaInject := run(append(fields, injected)...)

			recs, dmg, err := jitlog.ReadFile(filepath.Join(dir, "jit.log"))
			if err != nil || len(dmg) > 0 {
				t.Fatalf("log: %v %v", err, dmg)
			}
			var sym bytes.Buffer
			st, err := jitlog.Symbolize(&sym, bytes.NewReader(plain), jitlog.NewResolver(recs), jitlog.SymbolizeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			// The samples in selfjit's code, by time. perf script prints the ips of file-backed code
			// relative to the file, so those of the injected ELF files differ: take the times from
			// the plain recording.
			a := leaves(plain, pid, addr, size)
			b, s := leaves(viaInject, pid, 0, 1<<64-1), leaves(sym.Bytes(), pid, addr, size)
			t.Logf("%d samples in the code; perf script alone names them %v; symbolize stats %+v", len(a), names(a), st)
			if len(s) != len(a) || len(a) < 50 {
				t.Fatalf("%d samples in the code, %d after symbolize; want the same, at least 50", len(a), len(s))
			}
			count := map[string]int{}
			for k, name := range s {
				if b[k] != name {
					t.Errorf("sample at %d: perf inject says %q, symbolize %q", k, b[k], name)
				}
				want := "first"
				if k >= tSwitch {
					want = "second"
				}
				if name != want {
					t.Errorf("sample at %d (switch at %d): %q, want %q", k, tSwitch, name, want)
				}
				count[name]++
			}
			t.Logf("names: %v", count)
			if count["first"] < 20 || count["second"] < 20 {
				t.Errorf("names %v: want both, at least 20 samples each", count)
			}
			if dumps, _ := filepath.Glob(filepath.Join(dir, "jitted-*.so")); len(dumps) != 2 {
				t.Errorf("perf inject wrote %d jitted-*.so files, want 2 (one per CODE_LOAD)", len(dumps))
			}
			// The code: read from selfjit (live), or zeros (from the log).
			code := jittedCode(t, filepath.Join(dir, fmt.Sprintf("jitted-%d-0.so", pid)))
			if zero := bytes.Count(code, []byte{0}) == len(code); uint64(len(code)) != size || zero != (mode == "log") {
				t.Errorf("the code of the first load is % x (%d bytes; zeros expected: %v)", code, len(code), mode == "log")
			}
		})
	}
}

// leaves returns the leaf symbol (without offset) of each sample of pid whose leaf ip is in [addr,
// addr+size), by sample time.
func leaves(text []byte, pid int, addr, size uint64) map[uint64]string {
	out := map[uint64]string{}
	var t uint64
	ours, leaf := false, false
	for _, line := range strings.Split(string(text), "\n") {
		switch {
		case strings.TrimSpace(line) == "":
			ours = false
		case !strings.HasPrefix(line, "\t"):
			f := strings.Fields(line)
			ours, leaf = false, true
			for i, x := range f {
				if strings.HasPrefix(x, strconv.Itoa(pid)+"/") && i+1 < len(f) {
					tm, err := jitlog.ParseTime(strings.TrimSuffix(f[i+1], ":"))
					ours, t = err == nil, tm
				}
			}
		case ours && leaf:
			leaf = false
			f := strings.Fields(line)
			ip, err := strconv.ParseUint(f[0], 16, 64)
			if err != nil || ip < addr || ip-addr >= size {
				continue
			}
			sym := strings.Join(f[1:len(f)-1], " ")
			if i := strings.LastIndex(sym, "+0x"); i >= 0 {
				sym = sym[:i]
			}
			out[t] = sym
		}
	}
	return out
}

// jittedCode returns the code of an ELF file that perf inject wrote.
func jittedCode(t *testing.T, path string) []byte {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	text := f.Section(".text")
	if text == nil {
		t.Fatalf("%s has no .text", path)
	}
	b, err := text.Data()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func names(m map[uint64]string) map[string]int {
	c := map[string]int{}
	for _, n := range m {
		c[n]++
	}
	return c
}

func TestReadCode(t *testing.T) {
	buf := []byte("some code bytes")
	got, err := jitlog.ReadCode(os.Getpid(), uint64(uintptrOf(buf)), uint64(len(buf)))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, buf) {
		t.Errorf("ReadCode = %q, want %q", got, buf)
	}
	if _, err := jitlog.ReadCode(os.Getpid(), 8, 16); err == nil {
		t.Error("ReadCode of unmapped memory succeeded")
	}
}

func uintptrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }
