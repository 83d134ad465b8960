package jitlog

import (
	"bufio"
	"cmp"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strings"
)

// jitdump constants (tools/perf/Documentation/jitdump-specification.txt, tools/perf/util/jitdump.h).
const (
	jitdumpMagic      = 0x4A695444 // "JiTD" in the writer's byte order
	jitdumpVersion    = 1
	jitdumpHeaderSize = 40
	jitCodeLoad       = 0
	jitCodeLoadFixed  = 16 + 40 // record prefix, then pid, tid, vma, code_addr, code_size, code_index
)

// JitdumpOptions describe the writer of a jitdump file.
type JitdumpOptions struct {
	// PID is the header's pid. perf does not check it; perf's JVMTI agent writes the JVM's pid, and
	// CreateJitdump our own, as the file is named after us.
	PID int
	// Machine is the ELF machine of the code (EM_X86_64...); 0 means the machine this program runs on.
	Machine elf.Machine
	// Time is the header's timestamp, nanoseconds of CLOCK_MONOTONIC; 0 means now.
	Time uint64
}

// CodeLoad is a JIT_CODE_LOAD record: Size bytes of code named Name at Addr, loaded at Time in process
// PID (thread TID). perf inject --jit turns each into a small ELF file (jitted-<PID>-<index>.so, next
// to the dump) and an mmap of it into PID at Time, so that perf names the samples of that code after
// Time by Name.
type CodeLoad struct {
	Time     uint64
	PID, TID int
	Addr     uint64
	Size     uint64
	Name     string
	// Code is the code (Size bytes), for perf annotate; nil writes zeros. perf needs no code to name
	// samples.
	Code []byte
}

// maxJitCode bounds a record: jitdump record sizes are 32 bits.
const maxJitCode = math.MaxUint32 - jitCodeLoadFixed - MaxName - 1

// JitdumpWriter writes a jitdump file: the header, then CODE_LOAD records with increasing code_index
// and non-decreasing timestamps. It is not safe for concurrent use.
type JitdumpWriter struct {
	w     *bufio.Writer
	index uint64
	last  uint64
	err   error
}

// NewJitdump writes a jitdump header to w and returns a writer for the records.
func NewJitdump(w io.Writer, opts JitdumpOptions) (*JitdumpWriter, error) {
	m := opts.Machine
	if m == 0 {
		var ok bool
		if m, ok = hostMachine[runtime.GOARCH]; !ok {
			return nil, fmt.Errorf("jitdump: no ELF machine known for %s: set JitdumpOptions.Machine", runtime.GOARCH)
		}
	}
	t := opts.Time
	if t == 0 {
		t = monotonicNow()
	}
	if opts.PID < 0 || opts.PID > maxPID {
		return nil, fmt.Errorf("jitdump: pid %d out of range", opts.PID)
	}
	j := &JitdumpWriter{w: bufio.NewWriterSize(w, 64<<10)}
	ne := binary.NativeEndian
	h := make([]byte, 0, jitdumpHeaderSize)
	h = ne.AppendUint32(h, jitdumpMagic)
	h = ne.AppendUint32(h, jitdumpVersion)
	h = ne.AppendUint32(h, jitdumpHeaderSize)
	h = ne.AppendUint32(h, uint32(m))
	h = ne.AppendUint32(h, 0) // pad1
	h = ne.AppendUint32(h, uint32(opts.PID))
	h = ne.AppendUint64(h, t)
	h = ne.AppendUint64(h, 0) // flags: timestamps are CLOCK_MONOTONIC, not TSC
	if _, err := j.w.Write(h); err != nil {
		return nil, fmt.Errorf("jitdump: write header: %w", err)
	}
	return j, j.Flush()
}

var hostMachine = map[string]elf.Machine{
	"amd64": elf.EM_X86_64, "386": elf.EM_386, "arm64": elf.EM_AARCH64, "arm": elf.EM_ARM,
	"riscv64": elf.EM_RISCV, "ppc64le": elf.EM_PPC64, "ppc64": elf.EM_PPC64, "s390x": elf.EM_S390,
	"loong64": elf.EM_LOONGARCH, "mips64le": elf.EM_MIPS, "mips64": elf.EM_MIPS,
}

// CodeLoad writes a CODE_LOAD record. A timestamp below the previous record's is raised to it: perf
// injects the mmaps in file order. Names lose NUL bytes (the format ends names with one).
func (j *JitdumpWriter) CodeLoad(l CodeLoad) error {
	if j.err != nil {
		return j.err
	}
	if l.Code != nil && uint64(len(l.Code)) != l.Size {
		return fmt.Errorf("jitdump: code load %q: %d bytes of code for size %d", l.Name, len(l.Code), l.Size)
	}
	if l.Size > maxJitCode {
		return fmt.Errorf("jitdump: code load %q: size %d too large for a jitdump record", l.Name, l.Size)
	}
	if l.PID < 0 || l.PID > maxPID || l.TID < 0 || l.TID > maxPID {
		return fmt.Errorf("jitdump: code load %q: pid %d or tid %d out of range", l.Name, l.PID, l.TID)
	}
	name := truncUTF8(strings.ReplaceAll(l.Name, "\x00", " "), MaxName)
	t := max(l.Time, j.last)
	j.last = t
	total := uint64(jitCodeLoadFixed+len(name)+1) + l.Size
	ne := binary.NativeEndian
	b := make([]byte, 0, jitCodeLoadFixed+len(name)+1)
	b = ne.AppendUint32(b, jitCodeLoad)
	b = ne.AppendUint32(b, uint32(total))
	b = ne.AppendUint64(b, t)
	b = ne.AppendUint32(b, uint32(l.PID))
	b = ne.AppendUint32(b, uint32(l.TID))
	b = ne.AppendUint64(b, l.Addr) // vma
	b = ne.AppendUint64(b, l.Addr) // code_addr
	b = ne.AppendUint64(b, l.Size)
	b = ne.AppendUint64(b, j.index)
	b = append(b, name...)
	b = append(b, 0)
	if _, err := j.w.Write(b); err != nil {
		return j.fail(err)
	}
	if l.Code != nil {
		if _, err := j.w.Write(l.Code); err != nil {
			return j.fail(err)
		}
	} else if err := writeZeros(j.w, l.Size); err != nil {
		return j.fail(err)
	}
	j.index++
	return nil
}

func (j *JitdumpWriter) fail(err error) error {
	j.err = fmt.Errorf("jitdump: write: %w", err)
	return j.err
}

var zeros [4096]byte

func writeZeros(w io.Writer, n uint64) error {
	for n > 0 {
		k := min(n, uint64(len(zeros)))
		if _, err := w.Write(zeros[:k]); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// Flush writes buffered records out.
func (j *JitdumpWriter) Flush() error {
	if j.err != nil {
		return j.err
	}
	if err := j.w.Flush(); err != nil {
		return j.fail(err)
	}
	return nil
}

// WriteJitdump writes a CODE_LOAD for each span of process pid that was ever valid, in the order of
// their From, stamped with it, with zeros for code. A snapshot's span valid since the beginning is
// stamped with the time of the process's first record (the recorder's start): perf lets an mmap event
// of the code's anonymous memory after a load's time hide the load, and an anonymous mapping made
// while perf records comes after timestamp 0 (measured with perf 6.1: a load at 0 named nothing).
// perf inject --jit then names samples as Lookup does after that time, except after an UNLOAD:
// jitdump cannot end code, so perf keeps the last name (Lookup's fallback).
func (r *Resolver) WriteJitdump(j *JitdumpWriter, pid int) error {
	p := r.procs[pid]
	if p == nil {
		return errors.New("jitdump: no records of process " + fmt.Sprint(pid))
	}
	idx := make([]int, 0, len(p.spans))
	for i := range p.spans {
		if p.spans[i].From < p.spans[i].To {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(p.spans[a].From, p.spans[b].From) })
	for _, i := range idx {
		s := &p.spans[i]
		if err := j.CodeLoad(CodeLoad{Time: max(s.From, p.first), PID: pid, TID: pid, Addr: s.Start, Size: s.Size, Name: s.Name}); err != nil {
			return err
		}
	}
	return j.Flush()
}
