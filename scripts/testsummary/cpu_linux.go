package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// cgroup is a cgroup made for one test binary: every process it starts (JVMs, compilers, tools) inherits it,
// so its CPU counter is the package's whole cost, reaped or not.
type cgroup struct {
	dir    string // our cgroup
	parent string // where we were, to move back to before removing dir
	usage  func() (time.Duration, error)
	v2     bool
}

// counters are a cgroup's CPU time and, in cgroup v2, its CPU pressure stall times (cpu.pressure's totals):
// how long some of its runnable tasks, and all of them, waited for a CPU that other work held.
type counters struct {
	cpu, some, full time.Duration
}

// newCgroup makes a cgroup below our own and moves this process into it: in the unified hierarchy (cgroup v2,
// cpu.stat's usage_usec, kept for every cgroup whether or not the cpu controller is enabled), else in the
// cpuacct hierarchy of cgroup v1 (cpuacct.usage). It needs write access to the hierarchy (root).
func newCgroup() (*cgroup, error) {
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	var errs []error
	for _, v2 := range []bool{true, false} {
		mount, path, ok := cgroupPlace(string(mounts), string(self), v2)
		if !ok {
			continue
		}
		g, err := makeCgroup(filepath.Join(mount, path), v2)
		if err == nil {
			return g, nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return nil, errors.New("cgroup: neither cgroup2 nor cgroup v1's cpuacct is mounted")
	}
	return nil, errors.Join(errs...)
}

// cgroupPlace finds the mount point of the unified hierarchy (v2) or of v1's cpuacct controller, and our path
// in it (/proc/self/cgroup: "0::/path" for v2, "N:cpu,cpuacct:/path" for v1).
func cgroupPlace(mountinfo, self string, v2 bool) (mount, path string, ok bool) {
	for line := range strings.Lines(mountinfo) {
		pre, post, found := strings.Cut(strings.TrimSpace(line), " - ")
		fields, postFields := strings.Fields(pre), strings.Fields(post)
		if !found || len(fields) < 5 || len(postFields) < 3 {
			continue
		}
		switch {
		case v2 && postFields[0] == "cgroup2":
			mount = fields[4]
		case !v2 && postFields[0] == "cgroup" && hasOption(postFields[2], "cpuacct"):
			mount = fields[4]
		}
		if mount != "" {
			break
		}
	}
	if mount == "" {
		return "", "", false
	}
	for line := range strings.Lines(self) {
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if (v2 && parts[0] == "0" && parts[1] == "") || (!v2 && hasOption(parts[1], "cpuacct")) {
			return mount, parts[2], true
		}
	}
	return "", "", false
}

func hasOption(list, opt string) bool {
	for o := range strings.SplitSeq(list, ",") {
		if o == opt {
			return true
		}
	}
	return false
}

func makeCgroup(parent string, v2 bool) (*cgroup, error) {
	dir := filepath.Join(parent, fmt.Sprintf("jvmkit-test-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	g := &cgroup{dir: dir, parent: parent, v2: v2}
	if v2 {
		g.usage = func() (time.Duration, error) { return cpuStatUsage(filepath.Join(dir, "cpu.stat")) }
	} else {
		g.usage = func() (time.Duration, error) { return nanoseconds(filepath.Join(dir, "cpuacct.usage")) }
	}
	if _, err := g.usage(); err != nil {
		_ = os.Remove(dir)
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("cgroup: join %s: %w", dir, err)
	}
	return g, nil
}

// read returns the counters; stall times are zero without cgroup v2's pressure files.
func (g *cgroup) read() counters {
	var c counters
	var err error
	if c.cpu, err = g.usage(); err != nil {
		fmt.Fprintf(os.Stderr, "testsummary: %v\n", err)
	}
	if g.v2 {
		if data, err := os.ReadFile(filepath.Join(g.dir, "cpu.pressure")); err == nil {
			c.some, c.full = parsePressure(string(data))
		}
	}
	return c
}

// parsePressure reads the stall totals (microseconds) of a pressure file:
//
//	some avg10=0.00 avg60=0.00 avg300=0.00 total=164897135
//	full avg10=0.00 avg60=0.00 avg300=0.00 total=161416261
func parsePressure(data string) (some, full time.Duration) {
	for line := range strings.Lines(data) {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		for _, f := range fields[1:] {
			if v, ok := strings.CutPrefix(f, "total="); ok {
				us, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					continue
				}
				switch fields[0] {
				case "some":
					some = time.Duration(us) * time.Microsecond
				case "full":
					full = time.Duration(us) * time.Microsecond
				}
			}
		}
	}
	return some, full
}

func cpuStatUsage(path string) (time.Duration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("cgroup: %w", err)
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "usage_usec "); ok {
			us, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("cgroup: %s: %w", path, err)
			}
			return time.Duration(us) * time.Microsecond, nil
		}
	}
	return 0, fmt.Errorf("cgroup: %s has no usage_usec", path)
}

func nanoseconds(path string) (time.Duration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("cgroup: %w", err)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cgroup: %s: %w", path, err)
	}
	return time.Duration(ns), nil
}

// close moves us back and removes the cgroup once the processes left in it (killed JVMs still exiting) are
// gone; one that outlives the deadline keeps it, and is named.
func (g *cgroup) close() error {
	_ = os.WriteFile(filepath.Join(g.parent, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0)
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := os.Remove(g.dir)
		if err == nil || !errors.Is(err, unix.EBUSY) {
			return err
		}
		if time.Now().After(deadline) {
			procs, _ := os.ReadFile(filepath.Join(g.dir, "cgroup.procs"))
			return fmt.Errorf("cgroup %s: processes left behind by the test binary: %s", g.dir,
				strings.Join(strings.Fields(string(procs)), " "))
		}
		time.Sleep(50 * time.Millisecond) // a bounded poll for exits we cannot wait on (not our children)
	}
}

// wrap runs a test binary for `go test -exec` (argv: the binary and its flags) in a cgroup of its own and
// appends the CPU time of the binary and of each of its tests to the log named by $cpuLogEnv, passing the
// binary's output through unchanged. Without the variable, or without a cgroup to make, it just runs the binary.
func wrap(argv []string) int {
	logPath := os.Getenv(cpuLogEnv)
	var g *cgroup
	if logPath != "" {
		var err error
		if g, err = newCgroup(); err != nil {
			fmt.Fprintf(os.Stderr, "testsummary: no CPU accounting for %s: %v\n", filepath.Base(argv[0]), err)
		}
	}
	if g == nil {
		path, err := exec.LookPath(argv[0])
		if err == nil {
			err = unix.Exec(path, argv, os.Environ())
		}
		fmt.Fprintf(os.Stderr, "testsummary: %v\n", err)
		return 1
	}
	pkg := packagePath()
	start, startCounters := time.Now(), g.read()

	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stderr = os.Stdin, os.Stderr
	// go test kills us, not the binary, when it overruns -timeout after SIGQUIT: the binary must not outlive us.
	cmd.SysProcAttr = &unix.SysProcAttr{Pdeathsig: unix.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "testsummary: %v\n", err)
		_ = g.close()
		return 1
	}
	// go test stops a binary that overruns its -timeout with SIGQUIT (for the goroutine dump), then kills it.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, unix.SIGQUIT, unix.SIGINT, unix.SIGTERM)
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()

	var records []cpuRecord
	type began struct {
		at time.Time
		c  counters
	}
	running := make(map[string]began)
	r := bufio.NewReaderSize(stdout, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			_, _ = os.Stdout.Write(line)
			if name, verb, ok := framing(line); ok {
				now, c := time.Now(), g.read()
				switch verb {
				case "RUN":
					running[name] = began{now, c}
				case "PASS", "FAIL", "SKIP":
					if b, ok := running[name]; ok {
						records = append(records, newRecord(pkg, name, b.c, c, now.Sub(b.at)))
						delete(running, name)
					}
				}
			}
		}
		if err != nil {
			break
		}
	}
	waitErr := cmd.Wait()
	signal.Stop(sigs)
	close(sigs)
	total := newRecord(pkg, "", startCounters, g.read(), time.Since(start))
	if err := g.close(); err != nil {
		total.Note = err.Error()
		fmt.Fprintf(os.Stderr, "testsummary: %v\n", err)
	}
	records = append(records, total)
	if err := appendRecords(logPath, records); err != nil {
		fmt.Fprintf(os.Stderr, "testsummary: %v\n", err)
	}

	var exitErr *exec.ExitError
	switch {
	case errors.As(waitErr, &exitErr):
		if ws, ok := exitErr.Sys().(unix.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return exitErr.ExitCode()
	case waitErr != nil:
		fmt.Fprintf(os.Stderr, "testsummary: %v\n", waitErr)
		return 1
	}
	return 0
}

func newRecord(pkg, test string, from, to counters, wall time.Duration) cpuRecord {
	return cpuRecord{Package: pkg, Test: test, CPU: (to.cpu - from.cpu).Seconds(), Wall: wall.Seconds(),
		Some: (to.some - from.some).Seconds(), Full: (to.full - from.full).Seconds()}
}

// framing recognises the binary's test2json framing lines (-test.v=test2json marks them with a leading ^V):
// "=== RUN   Name" and "--- PASS: Name (1.23s)". The mark may follow output that did not end its line.
func framing(line []byte) (name, verb string, ok bool) {
	i := bytes.IndexByte(line, 0x16)
	if i < 0 {
		return "", "", false
	}
	s := strings.TrimRight(string(line[i+1:]), "\n")
	if rest, found := strings.CutPrefix(s, "=== RUN   "); found {
		return rest, "RUN", true
	}
	for _, v := range []string{"PASS", "FAIL", "SKIP"} {
		if rest, found := strings.CutPrefix(s, "--- "+v+": "); found {
			if j := strings.LastIndex(rest, " ("); j >= 0 {
				rest = rest[:j]
			}
			return rest, v, true
		}
	}
	return "", "", false
}

// packagePath names the package under test: go test runs the binary in the package's directory, so it is the
// module's path (go.mod above) joined with the directory's place in the module.
func packagePath() string {
	dir, err := os.Getwd()
	if err != nil {
		return "?"
	}
	for d := dir; ; d = filepath.Dir(d) {
		if data, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil {
			for line := range strings.Lines(string(data)) {
				if mod, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
					rel, _ := filepath.Rel(d, dir)
					return filepath.ToSlash(filepath.Join(strings.TrimSpace(mod), rel))
				}
			}
		}
		if d == filepath.Dir(d) {
			return dir
		}
	}
}

// appendRecords adds records to the log in one write: test binaries of several packages may end at once
// (go test -p N), and O_APPEND writes of a few kilobytes land whole.
func appendRecords(path string, records []cpuRecord) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, r := range records {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("CPU log: %w", err)
	}
	if _, err := io.Copy(f, &buf); err != nil {
		_ = f.Close()
		return fmt.Errorf("CPU log: %w", err)
	}
	return f.Close()
}
