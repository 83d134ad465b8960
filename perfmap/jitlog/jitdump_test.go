package jitlog_test

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/jvmkit/jvmkit/perfmap/jitlog"
)

// jitLoad is a CODE_LOAD as read back from a jitdump file.
type jitLoad struct {
	Time, Addr, Size, Index uint64
	PID, TID                uint32
	Name                    string
	Code                    []byte
}

// parseJitdump reads what NewJitdump and CodeLoad wrote, as perf's jitdump.c reads it.
func parseJitdump(t *testing.T, b []byte) (pid uint32, machine elf.Machine, loads []jitLoad) {
	t.Helper()
	ne := binary.NativeEndian
	if len(b) < 40 || ne.Uint32(b) != 0x4A695444 || ne.Uint32(b[4:]) != 1 || ne.Uint32(b[8:]) != 40 || ne.Uint64(b[32:]) != 0 {
		t.Fatalf("bad header % x", b[:min(len(b), 40)])
	}
	machine, pid = elf.Machine(ne.Uint32(b[12:])), ne.Uint32(b[20:])
	for b = b[40:]; len(b) > 0; {
		if len(b) < 16 {
			t.Fatalf("%d bytes left", len(b))
		}
		id, size := ne.Uint32(b), ne.Uint32(b[4:])
		if id != 0 || int(size) > len(b) {
			t.Fatalf("record id %d size %d with %d bytes left", id, size, len(b))
		}
		r := b[:size]
		l := jitLoad{Time: ne.Uint64(r[8:]), PID: ne.Uint32(r[16:]), TID: ne.Uint32(r[20:]), Addr: ne.Uint64(r[32:]),
			Size: ne.Uint64(r[40:]), Index: ne.Uint64(r[48:])}
		if ne.Uint64(r[24:]) != l.Addr {
			t.Errorf("vma %#x != code_addr %#x", ne.Uint64(r[24:]), l.Addr)
		}
		nul := bytes.IndexByte(r[56:], 0)
		l.Name = string(r[56 : 56+nul])
		l.Code = r[56+nul+1:]
		if uint64(len(l.Code)) != l.Size {
			t.Errorf("%d bytes of code for size %d", len(l.Code), l.Size)
		}
		loads = append(loads, l)
		b = b[size:]
	}
	return pid, machine, loads
}

func TestJitdumpWriter(t *testing.T) {
	var buf bytes.Buffer
	j, err := jitlog.NewJitdump(&buf, jitlog.JitdumpOptions{PID: 99, Machine: elf.EM_AARCH64, Time: 5})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []jitlog.CodeLoad{
		{Time: 100, PID: 7, TID: 8, Addr: 0x1000, Size: 4, Name: "a", Code: []byte{1, 2, 3, 4}},
		{Time: 50, PID: 7, TID: 7, Addr: 0x2000, Size: 3, Name: "b\x00c"}, // earlier: raised to 100
	} {
		if err := j.CodeLoad(l); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.CodeLoad(jitlog.CodeLoad{Size: 2, Code: []byte{1}}); err == nil {
		t.Error("code of the wrong size accepted")
	}
	if err := j.Flush(); err != nil {
		t.Fatal(err)
	}
	pid, m, loads := parseJitdump(t, buf.Bytes())
	if pid != 99 || m != elf.EM_AARCH64 {
		t.Errorf("header pid %d machine %v", pid, m)
	}
	want := []jitLoad{
		{Time: 100, PID: 7, TID: 8, Addr: 0x1000, Size: 4, Index: 0, Name: "a", Code: []byte{1, 2, 3, 4}},
		{Time: 100, PID: 7, TID: 7, Addr: 0x2000, Size: 3, Index: 1, Name: "b c", Code: []byte{0, 0, 0}},
	}
	if diff := cmp.Diff(want, loads); diff != "" {
		t.Errorf("loads (-want +got):\n%s", diff)
	}
}

// TestWriteJitdump exports a log: one load per span in time order, snapshot code stamped with the
// process's first record.
func TestWriteJitdump(t *testing.T) {
	r := jitlog.NewResolver([]jitlog.Record{
		load(300, 0x1000, 0x10, "B"),
		snap(200, 0x5000, 0x20, "Interpreter"),
		load(100, 0x1000, 0x10, "A"),
		load(150, 0x9000, 0x10, "gone"),
		load(150, 0x9000, 0x10, "gone!"), // replaces it at once: "gone" was never valid
	})
	var buf bytes.Buffer
	j, err := jitlog.NewJitdump(&buf, jitlog.JitdumpOptions{PID: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WriteJitdump(j, pid); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteJitdump(j, 12345); err == nil {
		t.Error("WriteJitdump of a process without records succeeded")
	}
	_, _, loads := parseJitdump(t, buf.Bytes())
	var got []string
	for _, l := range loads {
		got = append(got, l.Name+"@"+strconv.FormatUint(l.Time, 10))
		if l.PID != pid || l.TID != pid {
			t.Errorf("%s: pid %d tid %d", l.Name, l.PID, l.TID)
		}
	}
	want := []string{"Interpreter@100", "A@100", "gone!@150", "B@300"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("loads (-want +got):\n%s", diff)
	}
}
