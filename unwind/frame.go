package unwind

import (
	"fmt"
	"strconv"
	"strings"
)

// FrameType says what kind of code a frame runs.
type FrameType uint8

// Frame types.
const (
	Interpreted FrameType = iota + 1 // a Java method run by the template interpreter
	Compiled                         // a JIT-compiled Java method (C1 or C2), or a native method's wrapper
	Inlined                          // a Java method the JIT inlined into the compiled frame below it
	Stub                             // generated code that is no Java method: stubs, adapters, runtime blobs
	Native                           // C or C++ code: libjvm, libc, JNI libraries
	Kernel                           // a kernel function (from a sample's kernel callchain)
	Broken                           // the walk ended here without reaching the thread's root; see Reason
)

var frameTypeNames = [...]string{"", "interpreted", "compiled", "inlined", "stub", "native", "kernel", "broken"}

func (t FrameType) String() string {
	if int(t) < len(frameTypeNames) && t != 0 {
		return frameTypeNames[t]
	}
	return "type(" + strconv.Itoa(int(t)) + ")"
}

// MarshalText names the type in JSON.
func (t FrameType) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// Reason says why a walk ended before the thread's root. Every broken stack ends in a Broken frame
// carrying one.
type Reason uint8

// Reasons for broken stacks.
const (
	ReasonNone             Reason = iota
	ReasonNoJavaFrames            // native code of a thread that is no Java thread (GC, VM threads), not unwound to its start
	ReasonNativeUnwind            // native code of a Java thread that its call frame information does not unwind
	ReasonNoBlob                  // a pc in the code cache that is in no blob (free space)
	ReasonCodeUnloaded            // the code the pc was in is gone or was replaced since the sample
	ReasonInterpreterFrame        // an interpreted frame whose Method* or frame pointer is not plausible
	ReasonPrologue                // a return address in the prologue of a compiled method
	ReasonBadReturn               // a computed return address is outside any code (not in an executable mapping)
	ReasonBadSP                   // the stack pointer went down, left the stack or is misaligned
	ReasonRead                    // memory that the walk needed could not be read
	ReasonDeopt                   // the thread's frames are being deoptimised
	ReasonDepth                   // more frames than Options.MaxDepth
	ReasonTruncated               // the sample's stack copy ended, and the live stack beyond it has changed since (or is unreadable)
	ReasonContinuation            // the bottom of a virtual thread's frames (a continuation entry)
	numReasons
)

var reasonNames = [...]string{
	"complete", "no-java-frames", "native-unwind", "no-blob", "code-unloaded", "interpreter-frame", "prologue",
	"bad-return-address", "bad-sp", "read-failed", "deoptimizing", "too-deep", "truncated", "continuation",
}

func (r Reason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return "reason(" + strconv.Itoa(int(r)) + ")"
}

// MarshalText names the reason in JSON.
func (r Reason) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// Frame is one frame of a stack, leaf first.
type Frame struct {
	Type FrameType `json:"type"`
	// PC is the frame's pc: the sampled pc for the top frame, else a return address (the pc of the
	// compiled frame an inlined frame belongs to).
	PC uint64 `json:"pc"`
	SP uint64 `json:"sp,omitempty"`
	// Name is "pkg.Class.method" for Java frames, the demangled symbol for native ones (without
	// parameters), the blob or stub name for stubs, and the reason in brackets for broken frames.
	Name string `json:"name"`
	// Method is the Method* of Java frames.
	Method uint64 `json:"method,omitempty"`
	// Signature is the method's external name as Compiler.perfmap prints it, for Java frames.
	Signature string `json:"signature,omitempty"`
	// BCI and Line are -1 when unknown (a compiled pc without debug information, a native method, a
	// method without a line number table).
	BCI  int `json:"bci"`
	Line int `json:"line"`
	// Module is the base name of the file native code belongs to ("libjvm.so").
	Module string `json:"module,omitempty"`
	// Approximate marks frames whose method or position is a best guess: an nmethod whose debug
	// information could not be read, an interpreted method entered before its frame was built. (A
	// compiled return address without debug information, that of a leaf call, gives the nmethod's
	// method alone with BCI and Line -1, as HotSpot's own stack walkers do: its inlining is unknown.)
	Approximate bool   `json:"approximate,omitempty"`
	Reason      Reason `json:"reason,omitempty"`
}

// Java reports whether the frame is a Java method's.
func (f *Frame) Java() bool { return f.Type == Interpreted || f.Type == Compiled || f.Type == Inlined }

// String is the frame as one line: "Class.method:line (compiled)".
func (f *Frame) String() string {
	var b strings.Builder
	b.WriteString(f.Name)
	if f.Java() && f.Line >= 0 {
		b.WriteString(":" + strconv.Itoa(f.Line))
	}
	switch {
	case f.Type == Native && f.Module != "":
		fmt.Fprintf(&b, " (%s)", f.Module)
	case f.Type != Broken:
		b.WriteString(" (" + f.Type.String() + ")")
	}
	return b.String()
}

// Stack is one walked stack.
type Stack struct {
	TID    int     `json:"tid"`
	Frames []Frame `json:"frames"` // leaf first
	// Complete says the walk reached the thread's root: the entry frame of its first call into Java.
	Complete bool `json:"complete"`
	// Reason is why the walk ended early (the Reason of the last frame), ReasonNone when Complete.
	Reason Reason `json:"reason,omitempty"`
}

// Java returns the Java frames of the stack, leaf first.
func (s *Stack) Java() []Frame {
	var out []Frame
	for _, f := range s.Frames {
		if f.Java() {
			out = append(out, f)
		}
	}
	return out
}

// Regs are the registers a walk starts from (x86-64). BX, R13 and AX matter only for a top frame in
// the interpreter, where the JVM keeps the Method*, the bcp or sender sp and a return address in
// them; zero values are fine elsewhere.
type Regs struct {
	PC, SP, FP  uint64
	BX, R13, AX uint64
}

// RegsFromGPR takes the registers from a x86-64 user_regs_struct (ptrace, core files), as laid out in
// vmstructs.Regs.GPR.
func RegsFromGPR(gpr []uint64) (Regs, bool) {
	if len(gpr) < 20 {
		return Regs{}, false
	}
	return Regs{R13: gpr[2], FP: gpr[4], BX: gpr[5], AX: gpr[10], PC: gpr[16], SP: gpr[19]}, true
}

// Sample is the input of one walk: a thread's registers, optionally a copy of its user stack and its
// kernel callchain.
type Sample struct {
	// PID is the process's id where the sample was taken (perf's pid; informational for a walk).
	PID int
	TID int // the thread's id as the JVM knows it (OSThread::_thread_id); finds its JavaThread
	// JavaThread is the thread's JavaThread*, if the caller knows it; else it is found by TID.
	JavaThread uint64
	Regs       Regs
	// Stack is a copy of the user stack from Regs.SP up (perf's PERF_SAMPLE_STACK_USER). Reads within
	// it are served from the copy, the rest from the process's memory.
	Stack []byte
	// Kernel is the kernel part of the callchain, leaf first, without perf's context markers.
	Kernel []uint64
	Time   uint64 // nanoseconds, perf's clock; informational
	// Stopped says the thread's memory is as it was when the registers were taken: the thread is
	// stopped while it is walked (StopThread), or the memory is a core file's. Only then may the walk
	// use the thread's frame anchor (its last Java frame, which changes with every call into the VM
	// or native code) where native frames cannot be unwound otherwise; a sample walked after it was
	// taken (perf, USDT) never does, or it could be given another call's Java frames.
	Stopped bool
}

// Label is the frame's name as folded stacks, pprof profiles and flame graphs show it: Name with the
// folded format's separator ';' replaced by ':', and flamegraph.pl's annotation for compiled ("_[j]"),
// inlined ("_[i]") and kernel ("_[k]") frames, which package flame reads back. `jvmkit profile` and
// the fleet agent name frames by it, so that their profiles compare frame by frame.
func (f *Frame) Label() string {
	name := strings.ReplaceAll(f.Name, ";", ":")
	switch f.Type {
	case Compiled:
		return name + "_[j]"
	case Inlined:
		return name + "_[i]"
	case Kernel:
		return name + "_[k]"
	}
	return name
}
