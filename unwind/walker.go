package unwind

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"sort"
	"time"

	"github.com/jvmkit/jvmkit/internal/javaname"
	"github.com/jvmkit/jvmkit/vmstructs"
)

// Symbolizer names native code: a pc in a shared library or the executable.
type Symbolizer interface {
	// Symbolize returns the (demangled) function name and the base name of the file that holds pc.
	Symbolize(pc uint64) (name, module string, ok bool)
}

// Options tune a Walker.
type Options struct {
	// MaxDepth bounds the frames of one stack, inlined ones included; default 2048.
	MaxDepth int
	// Native names native frames; nil leaves them named by address.
	Native Symbolizer
	// Kernel names kernel frames; nil leaves them named by address.
	Kernel Symbolizer
	// Logger, if set, gets diagnostics (thread list refreshes that failed, layout problems).
	Logger *slog.Logger
	// NearTop names the inlining of a top compiled frame as jhsdb jstack does (the debug information at
	// or before its pc, vmstructs.CodeCache.ScopesNear) instead of as AsyncGetCallTrace does (the first
	// after it). Only the top frame of a stopped thread, outside calls and safepoints, can differ.
	NearTop bool
}

// Walker walks the stacks of one JVM's threads. It caches what it reads of the code cache and of
// methods; call Refresh now and then when it walks a live JVM, whose code changes. A Walker is not
// safe for concurrent use.
type Walker struct {
	j    *vmstructs.JVM
	cc   *vmstructs.CodeCache
	l    *vmstructs.FrameLayout
	opts Options

	blobs   []*blobInfo // sorted by start, non-overlapping
	methods map[uint64]*methodInfo
	// scopes holds the frames of compiled pcs; they outlive the view (see scopeKey).
	scopes *genCache[scopeKey, []Frame]
	// epilogues holds where in its epilogue each sampled top pc of an nmethod is, by the same key as
	// scopes (top false): reading the code at the pc was the largest part of a live walk's reads.
	epilogues *genCache[scopeKey, epilogueState]
	// interpReturns holds interpreterReturn by pc of the interpreter.
	interpReturns *genCache[uint64, interpReturn]
	// viewAt is when the view of the code cache was taken (or last tried), for WalkLive.
	viewAt  time.Time
	threads map[int]uint64 // tid -> JavaThread*
	// threadsRead is when the thread list was last read, to bound re-reads for unknown tids.
	threadsRead time.Time

	counts [numReasons]int
	walks  int
	// steps is how many steps (frames tried) the last walk took; bounded by maxSteps.
	steps int
}

type blobInfo struct {
	b          *vmstructs.CodeBlob
	deopt      uint64 // deoptimisation handler entry; 0 unknown or none
	origPC     int64  // nmethod::_orig_pc_offset
	deoptValid bool
}

// scopeKey names the frames of one pc of one nmethod. An nmethod's debug information never changes, and
// a compile id is never given twice, so the frames it names stay right across code cache views: a new
// nmethod at the same address has another id (and Method*).
type scopeKey struct {
	blob, pc, method uint64
	id               int
	top              bool
}

// maxCachedScopes bounds a generation of the walker's caches by pc (frames, epilogues, interpreter
// returns; see genCache): about 2 MB of frames a generation for a JVM that keeps compiling new code.
const maxCachedScopes = 1 << 12

type methodInfo struct {
	cm, code  uint64 // ConstMethod*, first bytecode
	codeSize  uint64
	native    bool
	name, sig string
	method    uint64 // the Method* itself
	ok        bool
	lines     map[int]int // line by bci, as read
}

func (m *methodInfo) addr() uint64 { return m.method }

// line is the source line of bci, -1 unknown; read once per method and bci in a view.
func (m *methodInfo) line(cc *vmstructs.CodeCache, bci int) int {
	if l, ok := m.lines[bci]; ok {
		return l
	}
	l, err := cc.LineNumber(m.method, bci)
	if err != nil {
		l = -1
	}
	if m.lines == nil {
		m.lines = map[int]int{}
	}
	m.lines[bci] = l
	return l
}

// New returns a walker for j, whose code cache and frame layout it reads now.
func New(j *vmstructs.JVM, opts Options) (*Walker, error) {
	if opts.MaxDepth <= 0 {
		opts.MaxDepth = 2048
	}
	l, err := j.FrameLayout()
	if err != nil {
		return nil, fmt.Errorf("unwind: %w", err)
	}
	cc, err := j.CodeCache()
	if err != nil {
		return nil, fmt.Errorf("unwind: %w", err)
	}
	w := &Walker{j: j, cc: cc, l: l, opts: opts, viewAt: time.Now(),
		scopes:        newGenCache[scopeKey, []Frame](maxCachedScopes),
		epilogues:     newGenCache[scopeKey, epilogueState](maxCachedScopes),
		interpReturns: newGenCache[uint64, interpReturn](maxCachedScopes)}
	w.reset()
	return w, nil
}

func (w *Walker) reset() {
	w.blobs = w.blobs[:0]
	w.methods = map[uint64]*methodInfo{}
	// Frames by pc outlive the view (see scopeKey): a profiler refreshes every second, and decoding the
	// scopes of every hot pc again each time was a tenth of the fleet agent's CPU.
}

// Refresh drops what the walker cached about code and methods, and takes a new view of the code
// cache: code is compiled, unloaded and replaced while a JVM runs.
func (w *Walker) Refresh() error {
	cc, err := w.j.CodeCache()
	if err != nil {
		return fmt.Errorf("unwind: %w", err)
	}
	w.cc = cc
	w.reset()
	return nil
}

// WalkLive is Walk for a sample just taken of a live JVM: the view of its code cache is taken again
// first when it is more than a second old (on failure the old view stays, and is tried again a second
// later).
func (w *Walker) WalkLive(s *Sample) Stack {
	if time.Since(w.viewAt) > time.Second {
		w.viewAt = time.Now()
		_ = w.Refresh()
	}
	return w.Walk(s)
}

// JVM returns the JVM the walker reads.
func (w *Walker) JVM() *vmstructs.JVM { return w.j }

// Counts returns how many walks ended for each reason; the key ReasonNone counts complete walks.
func (w *Walker) Counts() map[Reason]int {
	out := map[Reason]int{}
	for r, n := range w.counts {
		if n > 0 {
			out[Reason(r)] = n
		}
	}
	return out
}

// Walk walks a sample's stack and collects its frames.
func (w *Walker) Walk(s *Sample) Stack {
	st := Stack{TID: s.TID, Complete: true}
	for f := range w.Frames(s) {
		st.Frames = append(st.Frames, f)
		if f.Type == Broken {
			st.Complete, st.Reason = false, f.Reason
		}
	}
	return st
}

// Frames walks a sample's stack, leaf first: the kernel frames of its callchain, then the user
// frames from its registers. A stack that does not reach the thread's root ends in a Broken frame
// that names the reason; a stack that does ends in the Java frame of the thread's first method
// (or, for a thread that never runs Java code, where frame pointers end).
func (w *Walker) Frames(s *Sample) iter.Seq[Frame] {
	return func(yield func(Frame) bool) {
		w.walks++
		st := walkState{w: w, s: s, regs: s.Regs, yield: yield, mem: stackMem{base: w.j.Mem, lo: s.Regs.SP, data: s.Stack}}
		r := st.run()
		st.settle(r)
		w.counts[r]++
	}
}

// walkState is one walk in progress.
type walkState struct {
	w *Walker
	s *Sample
	// regs are the registers of the top frame: the sample's, or those a signal frame saved for the
	// frame it interrupted.
	regs  Regs
	mem   stackMem
	yield func(Frame) bool
	n     int  // frames yielded
	stop  bool // the consumer stopped the iteration
	java  bool // a Java frame was seen
	jt    uint64
	// jtKnown says jt was looked up (only walks that need it do: the thread list is read for it).
	jtKnown    bool
	anchorUsed bool
	// emptyFrame says the last frame had no stack of its own (an interpreted method at its entry):
	// the next sp may equal its sp.
	emptyFrame bool
	// guessed says the walk went on from an unproven return address; held are the frames since.
	guessed bool
	held    []Frame
	spMax   uint64 // the highest plausible sp
}

// emit yields f; false when the walk must end (the consumer stopped, or too many frames).
func (st *walkState) emit(f Frame) bool {
	if st.stop {
		return false
	}
	if st.n >= st.w.opts.MaxDepth {
		return false
	}
	st.n++
	if f.Java() {
		st.java = true
	}
	return st.out(f)
}

// out yields a frame, or holds it while the walk goes on from a guess.
func (st *walkState) out(f Frame) bool {
	if st.guessed {
		st.held = append(st.held, f)
		return true
	}
	if !st.yield(f) {
		st.stop = true
		return false
	}
	return true
}

// guess says that the walk goes on from a return address that could not be proven (a stub's, found
// by looking at its code and stack): the frames found from there are held until the walk ends, and
// given only if it reaches the thread's root. A wrong guess almost never does; a stack that ends
// early then ends right after the frame that was guessed from, not in frames of another call.
func (st *walkState) guess() { st.guessed = true }

// settle gives the held frames of a walk that went on from a guess: all of them when it reached
// the root, else only its broken frame.
func (st *walkState) settle(r Reason) {
	if !st.guessed || st.stop {
		return
	}
	held := st.held
	st.guessed, st.held = false, nil
	if r != ReasonNone && len(held) > 0 && held[len(held)-1].Type == Broken {
		held = held[len(held)-1:]
	}
	for _, f := range held {
		if !st.out(f) {
			return
		}
	}
}

// fail ends the walk with a Broken frame.
func (st *walkState) fail(r Reason, pc, sp uint64, detail string) Reason {
	switch {
	case st.mem.changed:
		// Whatever went wrong, it went wrong on memory that is not the sample's any more.
		r, detail = ReasonTruncated, "stack changed beyond the copy"
	case st.mem.beyond && r != ReasonTruncated && r != ReasonDepth && r != ReasonNoJavaFrames:
		// It went wrong on words read beyond the copy, from the live stack: they passed the checks of
		// stackMem.stillThere but cannot be proven the sample's.
		if detail != "" {
			detail = ": " + detail
		}
		r, detail = ReasonTruncated, "beyond the copy, "+r.String()+detail
	}
	name := "[" + r.String() + "]"
	if detail != "" {
		name = "[" + r.String() + ": " + detail + "]"
	}
	// The broken frame is emitted even at the depth limit.
	if !st.stop {
		st.n++
		st.out(Frame{Type: Broken, PC: pc, SP: sp, Name: name, BCI: -1, Line: -1, Reason: r})
	}
	return r
}

const (
	wordSize = 8
	// maxStackSpan bounds how far above the first sp a walk may go (thread stacks are at most a few
	// MiB; the main thread's 8 MiB by default).
	maxStackSpan = 64 << 20
	// maxInterpFrame bounds an interpreted frame (fp - sp): locals, monitors and expression stack.
	maxInterpFrame = 1 << 20
	maxNativeFrame = 1 << 20
)

// An interpreted frame keeps, in words below its fp (src/hotspot/cpu/x86/frame_x86.hpp, JDK 9+; only
// the sender sp is in VMStructs): the sender sp at -1, the Method* at -3, the bcp at -8.

const accNative = 0x0100 // JVM_ACC_NATIVE

func (st *walkState) run() Reason {
	w, s := st.w, st.s
	for _, pc := range s.Kernel {
		f := Frame{Type: Kernel, PC: pc, BCI: -1, Line: -1, Name: fmt.Sprintf("[kernel %#x]", pc)}
		if w.opts.Kernel != nil {
			if name, _, ok := w.opts.Kernel.Symbolize(pc); ok {
				f.Name = name
			}
		}
		if !st.emit(f) {
			return st.end()
		}
	}
	pc, sp, fp := s.Regs.PC, s.Regs.SP, s.Regs.FP
	if sp == 0 || sp%wordSize != 0 {
		return st.fail(ReasonBadSP, pc, sp, "")
	}
	st.spMax = sp + maxStackSpan
	top := true
	var lastSP uint64
	limit := maxSteps(w.opts.MaxDepth)
	for w.steps = 0; ; w.steps++ {
		if st.stop || st.n >= w.opts.MaxDepth {
			return st.end()
		}
		if w.steps >= limit {
			// Every step emits a frame or moves the sp up, so this is not reached on real stacks;
			// it bounds the work on corrupt ones whatever the loop's other checks miss.
			return st.fail(ReasonDepth, pc, sp, "too many steps")
		}
		if !top && (sp < lastSP || sp == lastSP && !st.emptyFrame || sp > st.spMax || sp%wordSize != 0) {
			return st.fail(ReasonBadSP, pc, sp, "")
		}
		lastSP, st.emptyFrame = sp, false
		st.mem.at = sp
		if pc == 0 {
			return st.fail(ReasonBadReturn, pc, sp, "null pc")
		}
		if !w.cc.Contains(pc) {
			next, end, r := st.native(pc, sp, fp, top)
			if end {
				return r
			}
			if next.signal || next.jump {
				// A signal frame's caller was interrupted, not calling: its pc is exact and its frame may
				// be partly built, as a sampled top frame's (and a signal may run on another stack). An
				// anchor jumps over frames not unwound.
				lastSP = 0
			}
			pc, sp, fp, top = next.pc, next.sp, next.fp, next.signal
			continue
		}
		if pc == w.l.CallStubReturn {
			// An entry frame: the VM called Java here. Its JavaCallWrapper holds the anchor of the Java
			// frames below the VM's own (C++) frames, or none at the thread's first call. The call stub's
			// caller is the VM's C++ (JavaCalls::call_helper), never generated code: a frame pointer that
			// says otherwise is not the call stub's (a stale return address taken for its pc, as in the
			// middle of an i2c adapter, which pops the return address and pushes it again later), and
			// reading a call wrapper through it could end the walk at a root that is not there.
			// (A word the sample's memory does not hold, as in a replay, proves nothing either way.)
			if ra, err := st.mem.u64(fp + wordSize); err == nil && (ra == 0 || w.cc.Contains(ra)) {
				return st.fail(ReasonBadReturn, pc, sp, "entry frame without the VM's caller")
			}
			cw, err := st.mem.u64(fp + uint64(w.l.EntryFrameCallWrapper*wordSize))
			if err != nil || cw == 0 {
				return st.fail(ReasonRead, pc, sp, "entry frame")
			}
			a, err := st.anchor(cw + w.l.CallWrapperAnchor)
			if err != nil {
				return st.fail(ReasonRead, pc, sp, "entry frame anchor")
			}
			if a.sp == 0 {
				return ReasonNone
			}
			if a.sp <= sp {
				return st.fail(ReasonBadSP, pc, sp, "entry frame anchor")
			}
			pc, sp, fp, top = a.pc, a.sp, a.fp, false
			lastSP = 0
			continue
		}
		bi, err := w.blob(pc)
		if err != nil {
			return st.fail(ReasonRead, pc, sp, "code cache")
		}
		if bi == nil {
			if top {
				// The sampled pc ran there, so the code was in a blob when the sample was taken: it
				// was unloaded or freed since.
				return st.fail(ReasonCodeUnloaded, pc, sp, "")
			}
			return st.fail(ReasonNoBlob, pc, sp, "")
		}
		b := bi.b
		var npc, nsp, nfp uint64
		var r Reason
		switch b.Kind {
		case vmstructs.KindInterpreter:
			npc, nsp, nfp, r = st.interpreted(pc, sp, fp, top)
		case vmstructs.KindNMethod, vmstructs.KindNativeNMethod:
			npc, nsp, nfp, r = st.compiled(bi, pc, sp, fp, top)
		default:
			npc, nsp, nfp, r = st.stub(b, pc, sp, fp, top)
		}
		if r != ReasonNone {
			if st.stop || st.n >= w.opts.MaxDepth {
				return st.end()
			}
			return st.fail(r, pc, sp, "")
		}
		pc, sp, fp, top = npc, nsp, nfp, false
	}
}

// maxSteps bounds the steps of one walk: a step emits at least one frame, except at entry frames and
// the thread's anchor, which move the sp up to the next Java frames.
func maxSteps(maxDepth int) int { return 2*maxDepth + 16 }

// end is the result of a walk that the consumer or the depth limit stopped.
func (st *walkState) end() Reason {
	if st.stop {
		return ReasonNone
	}
	return st.fail(ReasonDepth, 0, 0, "")
}

type anchor struct{ sp, pc, fp uint64 }

// anchor reads a JavaFrameAnchor; a pc of 0 is taken from the word below the anchor's sp, where the
// call that left Java code put its return address. A call wrapper's anchor is on the stack: it is read
// from the sample's stack copy when that holds it, as the thread may have moved on (or ended, and its
// stack been reused) since the sample.
func (st *walkState) anchor(addr uint64) (anchor, error) {
	l := st.w.l
	var a anchor
	for _, f := range []struct {
		off uint64
		v   *uint64
	}{{l.AnchorSP, &a.sp}, {l.AnchorPC, &a.pc}, {l.AnchorFP, &a.fp}} {
		v, err := st.mem.u64(addr + f.off)
		if err != nil {
			return anchor{}, err
		}
		*f.v = v
	}
	if a.sp != 0 && a.pc == 0 {
		pc, err := st.mem.u64(a.sp - wordSize)
		if err != nil {
			return anchor{}, err
		}
		a.pc = pc
	}
	return a, nil
}

// nativeStep is the caller of a native frame.
type nativeStep struct {
	pc, sp, fp uint64
	signal     bool // the frame was a signal trampoline's: its caller was interrupted
	jump       bool // the thread's frame anchor jumped over frames that could not be unwound
}

// nativeCode is implemented by native symbolizers that also know which memory is code and how native
// code unwinds (FileSymbols).
type nativeCode interface {
	unwindInfo(pc uint64, ret bool) nativeInfo
	isCode(pc uint64) bool
}

// native emits a native frame and finds its caller: by the code's call frame information (.eh_frame),
// over the sample's own stack, so that the Java frames found below are those the thread had when it
// was sampled. A stopped thread's walk (Sample.Stopped), whose memory is the thread's state, may
// instead jump by the thread's frame anchor to its last Java frame, as may any walk without call frame
// information (a Symbolizer that is no FileSymbols); frame pointers are the last resort there. end
// says the walk ends here, with result r (ReasonNone at the thread's first frame).
func (st *walkState) native(pc, sp, fp uint64, top bool) (next nativeStep, end bool, r Reason) {
	w := st.w
	nc, _ := w.opts.Native.(nativeCode)
	var info nativeInfo
	if nc != nil {
		info = nc.unwindInfo(pc, !top)
		if top && errors.Is(info.RowErr, errNoFDE) && len(st.s.Kernel) > 0 {
			// Sampled in a system call: pc follows the syscall instruction, which may end its
			// function (glibc's __restore_rt); the rules at the syscall itself hold.
			if prev := nc.unwindInfo(pc, true); prev.RowErr == nil {
				info = prev
			}
		}
		if !top && !info.Code {
			// Data, not code: a stale or corrupt word (the CDS archive, the modules image, text).
			return next, true, st.fail(ReasonBadReturn, pc, sp, "not code")
		}
	}
	if !st.emitNative(pc, sp, top) {
		return next, true, st.end()
	}
	if nc != nil && info.RowErr == nil {
		var cur nativeRegs
		cur.set(colPC, pc)
		cur.set(colSP, sp)
		cur.set(colBP, fp)
		if top {
			cur.set(colBX, st.regs.BX)
			cur.set(colR13, st.regs.R13)
			cur.set(colAX, st.regs.AX)
		}
		regs, outermost, err := info.Row.step(cur, st.mem.u64)
		switch {
		case err == nil && outermost:
			return next, true, ReasonNone // the thread's first frame (clone3, _start)
		case err == nil:
			get := func(col int) uint64 {
				if regs.valid&(1<<col) == 0 {
					return 0
				}
				return regs.v[col]
			}
			next = nativeStep{pc: get(colPC), sp: get(colSP), fp: get(colBP), signal: info.Row.Signal}
			if next.signal {
				st.regs = Regs{PC: next.pc, SP: next.sp, FP: next.fp, BX: get(colBX), R13: get(colR13), AX: get(colAX)}
			}
			return next, false, ReasonNone
		}
	}
	if (st.s.Stopped || nc == nil) && !st.anchorUsed {
		if jt := st.javaThread(); jt != 0 {
			a, err := st.anchor(jt + w.l.ThreadAnchor)
			if err != nil {
				return next, true, st.fail(ReasonRead, pc, sp, "frame anchor")
			}
			if a.sp != 0 && a.sp > sp {
				st.anchorUsed = true
				return nativeStep{pc: a.pc, sp: a.sp, fp: a.fp, jump: true}, false, ReasonNone
			}
		}
	}
	npc, nsp, nfp, ok := st.nativeCaller(sp, fp)
	if ok {
		if nc != nil {
			st.guess() // code without call frame information may not keep a frame pointer
		}
		return nativeStep{pc: npc, sp: nsp, fp: nfp}, false, ReasonNone
	}
	java := st.javaThread() != 0 && st.java
	if nc == nil && npc == 0 && nsp != 0 && !java {
		return next, true, ReasonNone // frame pointers ended: the root of a native thread
	}
	if !java && st.javaThread() == 0 {
		return next, true, st.fail(ReasonNoJavaFrames, pc, sp, "")
	}
	return next, true, st.fail(ReasonNativeUnwind, pc, sp, "")
}

// javaThread is the sampled thread's JavaThread*, 0 for threads that are none (GC and VM threads).
func (st *walkState) javaThread() uint64 {
	if !st.jtKnown {
		st.jtKnown = true
		st.jt = st.s.JavaThread
		if st.jt == 0 {
			st.jt = st.w.javaThread(st.s.TID)
		}
	}
	return st.jt
}

// nativeCaller follows the frame pointer of C or C++ code. ok is false where the chain ends; npc is
// then 0 and nsp non-zero if it ended at a null frame pointer or return address (a thread's start).
func (st *walkState) nativeCaller(sp, fp uint64) (npc, nsp, nfp uint64, ok bool) {
	if fp == 0 {
		return 0, sp, 0, false
	}
	if fp < sp || fp-sp > maxNativeFrame || fp%wordSize != 0 {
		return 0, 0, 0, false
	}
	ra, err1 := st.mem.u64(fp + wordSize)
	next, err2 := st.mem.u64(fp)
	if err1 != nil || err2 != nil {
		return 0, 0, 0, false
	}
	if ra == 0 {
		return 0, fp, 0, false
	}
	if ra < 4096 {
		return 0, 0, 0, false
	}
	return ra, fp + 2*wordSize, next, true
}

func (st *walkState) emitNative(pc, sp uint64, top bool) bool {
	f := Frame{Type: Native, PC: pc, SP: sp, BCI: -1, Line: -1}
	if sym := st.w.opts.Native; sym != nil {
		look := pc
		if !top {
			look-- // a return address may lie just past its function (a call to a noreturn function)
		}
		if name, mod, ok := sym.Symbolize(look); ok {
			f.Name, f.Module = name, mod
		} else if mod != "" {
			f.Name, f.Module = "["+mod+"]", mod
		}
	}
	if f.Name == "" {
		f.Name = fmt.Sprintf("[native %#x]", pc)
	}
	return st.emit(f)
}

// interpreted handles a frame of the template interpreter.
func (st *walkState) interpreted(pc, sp, fp uint64, top bool) (npc, nsp, nfp uint64, r Reason) {
	w := st.w
	plausible := fp > sp && fp-sp < maxInterpFrame && fp%wordSize == 0
	var m *methodInfo
	if plausible {
		if mp, err := st.mem.u64(fp - 3*wordSize); err == nil {
			spilled, _ := st.mem.u64(fp - 8*wordSize)
			bcp := spilled
			if top {
				bcp = st.regs.R13
			}
			m = w.methodAt(mp, bcp, spilled)
		}
	}
	if top {
		if ret, ok := w.interpreterReturnAt(st, pc); ok {
			// The method returns and its frame is gone ("leave" ran): only its caller is left.
			ra, csp := st.regs.R13, st.regs.BX
			switch ret {
			case retAtSP:
				v, err := st.mem.u64(sp)
				if err != nil {
					return 0, 0, 0, ReasonRead
				}
				ra = v
			case retInR13AtSP:
				csp = sp
			}
			if csp < sp || csp-sp > maxInterpFrame || !st.w.cc.Contains(ra) && !st.plausibleText(ra) {
				return 0, 0, 0, ReasonInterpreterFrame
			}
			if !st.emit(Frame{Type: Stub, PC: pc, SP: sp, Name: "Interpreter", BCI: -1, Line: -1}) {
				return 0, 0, 0, ReasonNone
			}
			st.emptyFrame = csp == sp
			return ra, csp, fp, ReasonNone
		}
		// The interpreter keeps the live bcp in r13 and spills it to the frame only at calls. Where
		// r13 is no bcp of the frame's method, the sample hit a method's entry before its frame was
		// built: then rbx holds the callee's Method* and r13 the sender's sp.
		if m != nil && (m.native || m.codeAt(st.regs.R13)) {
			bci := -1
			if !m.native {
				bci = int(st.regs.R13 - m.code)
			}
			if !st.emitJava(Interpreted, m, bci, pc, sp, false) {
				return 0, 0, 0, ReasonNone
			}
			return st.interpretedSender(fp)
		}
		if e := w.method(st.regs.BX); e != nil {
			if cpc, csp, cfp, ok := st.interpreterEntry(pc, sp, fp); ok {
				if !st.emitJava(Interpreted, e, -1, pc, sp, true) {
					return 0, 0, 0, ReasonNone
				}
				st.guess()
				return cpc, csp, cfp, ReasonNone
			}
		}
		if m == nil {
			return 0, 0, 0, ReasonInterpreterFrame
		}
		// Inside the interpreter's own code (a template, a call into the VM): the frame is built.
		if !st.emitJava(Interpreted, m, st.spilledBCI(m, fp), pc, sp, true) {
			return 0, 0, 0, ReasonNone
		}
		return st.interpretedSender(fp)
	}
	if m == nil {
		return 0, 0, 0, ReasonInterpreterFrame
	}
	if !st.emitJava(Interpreted, m, st.spilledBCI(m, fp), pc, sp, false) {
		return 0, 0, 0, ReasonNone
	}
	return st.interpretedSender(fp)
}

// spilledBCI is the bci saved in an interpreted frame's bcp slot, -1 when it is none.
func (st *walkState) spilledBCI(m *methodInfo, fp uint64) int {
	if m.native {
		return -1
	}
	bcp, err := st.mem.u64(fp - 8*wordSize)
	if err != nil {
		return -1
	}
	if m.codeAt(bcp) {
		return int(bcp - m.code)
	}
	if bcp < m.codeSize {
		return int(bcp) // JDK 8 keeps a bci in the slot while the frame is being set up ("bcx")
	}
	return -1
}

func (st *walkState) interpretedSender(fp uint64) (npc, nsp, nfp uint64, r Reason) {
	ra, err1 := st.mem.u64(fp + wordSize)
	ssp, err2 := st.mem.u64(fp - wordSize)
	next, err3 := st.mem.u64(fp)
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, 0, 0, ReasonRead
	}
	// The sender sp is the caller's unextended sp: a compiled caller that went through a c2i adapter
	// had its stack extended for the arguments.
	if ssp <= fp-8*wordSize || ssp > fp+maxInterpFrame {
		return 0, 0, 0, ReasonBadSP
	}
	return ra, ssp, next, ReasonNone
}

// interpreterEntry finds the caller of an interpreted method entered before its frame was built
// (rbx = Method*, r13 = the sender's sp). The return address is at sp right at the entry, in rax
// while the entry code moves the locals, and at fp+8 once it pushed a new fp.
func (st *walkState) interpreterEntry(pc, sp, fp uint64) (npc, nsp, nfp uint64, ok bool) {
	w := st.w
	ssp := st.regs.R13
	if ssp < sp || ssp-sp > maxInterpFrame {
		return 0, 0, 0, false
	}
	// Once the entry popped the return address into rax, the method has no frame yet: its caller's sp
	// is its own.
	st.emptyFrame = ssp == sp
	if ra, err := st.mem.u64(sp); err == nil && w.cc.Contains(ra) && ra != pc {
		return ra, ssp, fp, true
	}
	if fp >= sp && fp < ssp {
		if ra, err := st.mem.u64(fp + wordSize); err == nil && w.cc.Contains(ra) {
			next, err := st.mem.u64(fp)
			if err == nil {
				return ra, ssp, next, true
			}
		}
	}
	if w.cc.Contains(st.regs.AX) {
		return st.regs.AX, ssp, fp, true
	}
	return 0, 0, 0, false
}

// compiled handles an nmethod: its frame size gives the caller's sp; rbp is a general register in
// compiled code (without -XX:+PreserveFramePointer), so the caller's fp is the saved one below the
// return address.
func (st *walkState) compiled(bi *blobInfo, pc, sp, fp uint64, top bool) (npc, nsp, nfp uint64, r Reason) {
	w, b := st.w, bi.b
	symPC := pc
	if !top {
		if d, off := w.deopt(bi); d != 0 && pc == d {
			// A deoptimised frame returns into the deopt handler; the pc it had is saved in the frame.
			orig, err := st.mem.u64(sp + uint64(off))
			if err == nil && orig >= b.Start && orig < b.End {
				symPC = orig
			}
		}
	}
	fs := uint64(b.FrameSize)
	off := pc - b.Start
	emit := func() bool {
		return st.emitCompiled(bi, symPC, pc, sp, top)
	}
	if top && b.FrameComplete >= 0 && off < uint64(b.FrameComplete) {
		if !emit() {
			return 0, 0, 0, ReasonNone
		}
		return st.prologue(b, pc, sp, fp)
	}
	if !top && b.FrameComplete >= 0 && off < uint64(b.FrameComplete) && b.Kind == vmstructs.KindNMethod {
		return 0, 0, 0, ReasonPrologue
	}
	if !emit() {
		return 0, 0, 0, ReasonNone
	}
	if top {
		if npc, nsp, nfp, ok := st.popped(w.epilogueAt(st, b, pc), sp, fp); ok {
			return npc, nsp, nfp, ReasonNone
		}
	}
	npc, nsp, nfp, r = st.fixedFrame(sp, fs)
	if r == ReasonBadReturn && top {
		// Code that does not follow the patterns (a pc in a stub-like part of the nmethod): the
		// return address may be at sp.
		if ra, err := st.mem.u64(sp); err == nil && st.w.cc.Contains(ra) {
			st.guess()
			return ra, sp + wordSize, fp, ReasonNone
		}
	}
	return npc, nsp, nfp, r
}

// epilogue unwinds a top frame whose pc is in an epilogue, after its frame was popped.
func (st *walkState) epilogue(pc, sp, fp uint64) (npc, nsp, nfp uint64, ok bool) {
	return st.popped(epilogue(st.code(pc, 24)), sp, fp)
}

// epilogueAt is epilogue's reading of an nmethod's code at pc, kept by pc: compiled code does not
// change where it returns (what is patched in place is call targets, entries and barrier immediates,
// none of which the epilogue patterns look at), and a compile id is never given twice.
func (w *Walker) epilogueAt(st *walkState, b *vmstructs.CodeBlob, pc uint64) epilogueState {
	if b.Kind != vmstructs.KindNMethod || b.CompileID <= 0 {
		return epilogue(st.code(pc, 24))
	}
	k := scopeKey{blob: b.BlobAddr, pc: pc, method: b.Method, id: b.CompileID}
	if e, ok := w.epilogues.get(k); ok {
		return e
	}
	code := st.code(pc, 24)
	e := epilogue(code)
	if len(code) == 24 {
		w.epilogues.put(k, e) // not a failed read
	}
	return e
}

// popped unwinds a top frame in the given state of its epilogue.
func (st *walkState) popped(e epilogueState, sp, fp uint64) (npc, nsp, nfp uint64, ok bool) {
	switch e {
	case atRet:
		if ra, err := st.mem.u64(sp); err == nil {
			return ra, sp + wordSize, fp, true
		}
	case atPopRBP:
		saved, err1 := st.mem.u64(sp)
		ra, err2 := st.mem.u64(sp + wordSize)
		if err1 == nil && err2 == nil {
			return ra, sp + 2*wordSize, saved, true
		}
	}
	return 0, 0, 0, false
}

// prologue unwinds a top frame whose pc is before its frame is complete. The prologue is decoded from
// the entry on: "[mov [rsp-n], eax;] push rbp; [mov rbp, rsp;] sub rsp, n", then (JDK 21+ for all
// collectors) the nmethod entry barrier.
func (st *walkState) prologue(b *vmstructs.CodeBlob, pc, sp, fp uint64) (npc, nsp, nfp uint64, r Reason) {
	entry := b.VerifiedEntry
	pushed, built, saved := false, false, false
	if entry != 0 && entry <= pc && pc-entry < 64 {
		pushed, built, saved = prologueState(st.code(entry, int(pc-entry)))
	}
	switch {
	case built:
		npc, nsp, nfp, r = st.fixedFrame(sp, uint64(b.FrameSize))
		if !saved && r == ReasonNone {
			nfp = fp // C2's prologue has not stored the caller's rbp yet: it is still in rbp
		}
		return npc, nsp, nfp, r
	case pushed:
		ra, err1 := st.mem.u64(sp + wordSize)
		saved, err2 := st.mem.u64(sp)
		if err1 != nil || err2 != nil {
			return 0, 0, 0, ReasonRead
		}
		return ra, sp + 2*wordSize, saved, ReasonNone
	}
	ra, err := st.mem.u64(sp)
	if err != nil {
		return 0, 0, 0, ReasonRead
	}
	return ra, sp + wordSize, fp, ReasonNone
}

// fixedFrame unwinds a frame of known size: the return address is the frame's last word, the saved
// rbp below it. Generated code sometimes keeps a few words beyond the frame size; if the return
// address is not code, the next few words are tried.
func (st *walkState) fixedFrame(sp, fs uint64) (npc, nsp, nfp uint64, r Reason) {
	if fs < 2*wordSize || fs > maxInterpFrame {
		return 0, 0, 0, ReasonBadSP
	}
	for extra := uint64(0); extra <= 6*wordSize; extra += wordSize {
		ssp := sp + fs + extra
		ra, err := st.mem.u64(ssp - wordSize)
		if err != nil {
			return 0, 0, 0, ReasonRead
		}
		if st.w.cc.Contains(ra) || extra == 0 && st.plausibleText(ra) {
			saved, err := st.mem.u64(ssp - 2*wordSize)
			if err != nil {
				return 0, 0, 0, ReasonRead
			}
			if extra > 0 {
				st.guess()
			}
			return ra, ssp, saved, ReasonNone
		}
	}
	return 0, 0, 0, ReasonBadReturn
}

// plausibleText accepts a return address outside the code cache when it is in native code: a native
// symbolizer that knows the process's mappings says it is executable, one that does not at least
// knows its module (compiled code is called from native code only through the call stub and upcall
// stubs, which are in the code cache, but stubs are called from libjvm).
func (st *walkState) plausibleText(pc uint64) bool {
	if nc, ok := st.w.opts.Native.(nativeCode); ok {
		return nc.isCode(pc)
	}
	if st.w.opts.Native == nil {
		return false
	}
	_, mod, ok := st.w.opts.Native.Symbolize(pc)
	return ok || mod != ""
}

// stub handles generated code that is not a Java method.
func (st *walkState) stub(b *vmstructs.CodeBlob, pc, sp, fp uint64, top bool) (npc, nsp, nfp uint64, r Reason) {
	f := Frame{Type: Stub, PC: pc, SP: sp, Name: stubName(b), BCI: -1, Line: -1}
	if !st.emit(f) {
		return 0, 0, 0, ReasonNone
	}
	if top && b.Kind == vmstructs.KindAdapter {
		if inRAX, r13Set := c2iReturn(st.code(pc, 16)); inRAX {
			// A c2i adapter between popping its return address and storing it again.
			csp := sp
			if r13Set {
				csp = st.regs.R13
			}
			ra := st.regs.AX
			if csp < sp || csp-sp > maxInterpFrame || !st.w.cc.Contains(ra) && !st.plausibleText(ra) {
				return 0, 0, 0, ReasonBadReturn
			}
			st.emptyFrame = csp == sp
			return ra, csp, fp, ReasonNone
		}
	}
	if b.FrameSize > 0 && (!top || b.FrameComplete < 0 || pc-b.Start >= uint64(b.FrameComplete)) {
		if !top {
			return st.fixedFrame(sp, uint64(b.FrameSize))
		}
		if npc, nsp, nfp, ok := st.epilogue(pc, sp, fp); ok {
			return npc, nsp, nfp, ReasonNone
		}
		npc, nsp, nfp, r = st.fixedFrame(sp, uint64(b.FrameSize))
		// Most runtime stubs never say where their frame is complete: a pc may be in the prologue or
		// epilogue, where the frame is not all there. They are called directly, so a return address
		// that follows a call into the stub is theirs; else the search below finds it.
		if b.Kind != vmstructs.KindRuntimeStub || b.FrameComplete >= 0 || r == ReasonNone && st.callsInto(npc, b) {
			return npc, nsp, nfp, r
		}
	}
	// A frameless stub (StubRoutines, vtable and itable stubs, adapters, C1's register-pushing stubs),
	// or a stub's prologue or epilogue. The first word above sp that returns from a direct call into
	// this blob is the return address (the words below it are what the stub pushed); failing that, the
	// stub's shape is guessed, and each guess must lead back into code.
	st.guess()
	word := func(a uint64) uint64 { v, _ := st.mem.u64(a); return v }
	if b.Kind == vmstructs.KindVtable || b.Kind == vmstructs.KindAdapter || b.Kind == vmstructs.KindMHAdapter {
		// These push nothing before they jump on (an i2c adapter is entered from the interpreter,
		// whose return address follows no call): the return address is at sp.
		if ra := word(sp); ra != 0 && (st.w.cc.Contains(ra) || st.plausibleText(ra)) {
			return ra, sp + wordSize, fp, ReasonNone
		}
	}
	for k := uint64(0); k < maxStubScan; k++ {
		slot := sp + k*wordSize
		ra, err := st.mem.u64(slot)
		if err != nil {
			break
		}
		if st.callsInto(ra, b) {
			nfp := fp
			if k > 0 && fp == slot-wordSize {
				nfp = word(fp) // the stub ran "enter"
			}
			return ra, slot + wordSize + st.stackArgs(ra), nfp, ReasonNone
		}
	}
	code := st.code(pc, 8)
	type cand struct{ pc, sp, fp uint64 }
	var cands []cand
	switch {
	case isMovRBPRSP(code):
		cands = append(cands, cand{word(sp + wordSize), sp + 2*wordSize, word(sp)})
	case len(code) >= 1 && (code[0] == 0x55 || code[0] == 0xc3): // push rbp, ret
		cands = append(cands, cand{word(sp), sp + wordSize, fp})
	}
	if b.Kind == vmstructs.KindVtable || b.Kind == vmstructs.KindAdapter || b.Kind == vmstructs.KindMHAdapter {
		cands = append(cands, cand{word(sp), sp + wordSize, fp})
	}
	if fp >= sp && fp-sp < 1<<16 && fp%wordSize == 0 {
		// The stub ran "enter" ("push rbp; mov rbp, rsp": fp is sp until it pushes more).
		if word(fp+wordSize) == ^uint64(0) {
			// JDK 21+'s nmethod entry barrier stub pushes a cookie (-1, the slot for a new sp when it
			// deoptimizes) before "enter": the return address is above it.
			cands = append(cands, cand{word(fp + 2*wordSize), fp + 3*wordSize, word(fp)})
		}
		cands = append(cands, cand{word(fp + wordSize), fp + 2*wordSize, word(fp)})
	}
	cands = append(cands, cand{word(sp), sp + wordSize, fp})
	for _, c := range cands {
		if c.pc != 0 && c.sp > sp && (st.w.cc.Contains(c.pc) || st.plausibleText(c.pc)) {
			return c.pc, c.sp, c.fp, ReasonNone
		}
	}
	return 0, 0, 0, ReasonBadReturn
}

// stackArgs is the size of the arguments a compiled method pushed for the call that returns to ra, which
// it pops after the call: its frame (of a fixed size from its sp) starts above them. Measured on Jetty
// (JDK 17, 60 s at 499 Hz): samples in C1's slow_subtype_check stub were unwound into the caller's frame
// two words low and ended in interpreter-frame or bad-return-address.
func (st *walkState) stackArgs(ra uint64) uint64 {
	if bi, err := st.w.blob(ra); err != nil || bi == nil || bi.b.Kind != vmstructs.KindNMethod {
		return 0
	}
	return uint64(poppedAfterCall(st.code(ra, 8))) * wordSize
}

// maxStubScan bounds the words above a stub's sp searched for its return address: C1's stubs that
// save every register push 1,152 bytes.
const maxStubScan = 160

// callsInto reports whether ra is the return address of a call that can have entered blob b: a
// direct call ("call rel32") into b (into any of its stubs: one may jump to another), or an indirect
// call (libjvm calls stubs through function pointers). A direct call elsewhere is no caller of b's.
func (st *walkState) callsInto(ra uint64, b *vmstructs.CodeBlob) bool {
	if ra < 8 || !st.w.cc.Contains(ra) && !st.plausibleText(ra) {
		return false
	}
	code := st.code(ra-8, 8)
	if len(code) != 8 {
		return false
	}
	if target, ok := directCallTarget(code[3:], ra); ok {
		return target >= b.Start && target < b.End
	}
	return indirectCall(code)
}

func stubName(b *vmstructs.CodeBlob) string {
	if b.Name != "" {
		return b.Name
	}
	return "[" + b.Kind + "]"
}

// code reads up to n bytes of code at pc (fewer at the end of readable memory).
func (st *walkState) code(pc uint64, n int) []byte {
	buf := make([]byte, n)
	k, _ := st.w.j.Mem.ReadAt(buf, pc)
	return buf[:k]
}

// emitJava emits an interpreted frame.
func (st *walkState) emitJava(t FrameType, m *methodInfo, bci int, pc, sp uint64, approx bool) bool {
	f := Frame{Type: t, PC: pc, SP: sp, Name: m.name, Signature: m.sig, Method: 0, BCI: bci, Line: -1, Approximate: approx}
	f.Method = m.addr()
	if bci >= 0 {
		f.Line = m.line(st.w.cc, bci)
	}
	return st.emit(f)
}

// emitCompiled emits the frames of a compiled pc: the inlined methods, innermost first, then the
// compiled method.
func (st *walkState) emitCompiled(bi *blobInfo, symPC, pc, sp uint64, top bool) bool {
	for _, f := range st.w.compiledFrames(bi, symPC, top) {
		f.PC, f.SP = pc, sp
		if !st.emit(f) {
			return false
		}
	}
	return true
}

func (w *Walker) compiledFrames(bi *blobInfo, pc uint64, top bool) []Frame {
	b := bi.b
	k := scopeKey{blob: b.BlobAddr, pc: pc, method: b.Method, id: b.CompileID, top: top}
	if fs, ok := w.scopes.get(k); ok {
		return fs
	}
	var scopes []vmstructs.Scope
	var err error
	if top && w.opts.NearTop {
		scopes, err = w.cc.ScopesNear(b, pc)
	} else {
		scopes, err = w.cc.Scopes(b, pc, top)
	}
	var fs []Frame
	if err != nil && len(scopes) == 0 {
		name := javaname.Qualified(b.MethodName)
		if name == "" {
			name = "[unknown nmethod]"
		}
		fs = []Frame{{Type: Compiled, Name: name, Signature: b.MethodName, Method: b.Method, BCI: -1, Line: -1, Approximate: true}}
	} else {
		for i, s := range scopes {
			t := Inlined
			if i == len(scopes)-1 {
				t = Compiled
			}
			name := javaname.Qualified(s.MethodName)
			if name == "" {
				name = fmt.Sprintf("[method %#x]", s.Method)
			}
			fs = append(fs, Frame{Type: t, Name: name, Signature: s.MethodName, Method: s.Method, BCI: s.BCI, Line: s.Line})
		}
		if !top && len(fs) == 1 && fs[0].BCI < 0 {
			// A return address without debug information (a leaf call into a stub or the runtime):
			// the method is known, where in it is not (a call site's bci is never -1).
			fs[0].Line = -1
		}
	}
	w.scopes.put(k, fs)
	return fs
}

// blob finds the code blob of pc, from the walker's cache or the code cache.
func (w *Walker) blob(pc uint64) (*blobInfo, error) {
	i := sort.Search(len(w.blobs), func(i int) bool { return w.blobs[i].b.End > pc })
	if i < len(w.blobs) && w.blobs[i].b.Start <= pc {
		return w.blobs[i], nil
	}
	b, err := w.cc.FindBlob(pc)
	if err != nil || b == nil {
		return nil, err
	}
	if pc < b.Start || pc >= b.End {
		// In the blob's header or data, not its code: no frame runs there.
		return nil, nil
	}
	bi := &blobInfo{b: b}
	j := sort.Search(len(w.blobs), func(i int) bool { return w.blobs[i].b.Start >= b.End })
	k := sort.Search(len(w.blobs), func(i int) bool { return w.blobs[i].b.End > b.Start })
	// Replace whatever the new blob overlaps (code freed and reused since it was cached).
	w.blobs = append(w.blobs[:k], append([]*blobInfo{bi}, w.blobs[j:]...)...)
	return bi, nil
}

// deopt returns the nmethod's deoptimisation handler and original-pc offset.
func (w *Walker) deopt(bi *blobInfo) (uint64, int64) {
	if bi.deoptValid {
		return bi.deopt, bi.origPC
	}
	bi.deoptValid = true
	l := w.l
	if !l.DeoptHandler.OK || !l.OrigPCOffset.OK || bi.b.Kind != vmstructs.KindNMethod {
		return 0, 0
	}
	var buf [8]byte
	read := func(f vmstructs.F) (uint64, bool) {
		n := min(max(f.Size, 4), 8)
		if _, err := w.j.Mem.ReadAt(buf[:n], bi.b.BlobAddr+f.Offset); err != nil {
			return 0, false
		}
		if n == 4 {
			return uint64(int64(int32(binary.LittleEndian.Uint32(buf[:4])))), true
		}
		return binary.LittleEndian.Uint64(buf[:]), true
	}
	h, ok1 := read(l.DeoptHandler)
	o, ok2 := read(l.OrigPCOffset)
	if !ok1 || !ok2 {
		return 0, 0
	}
	if l.DeoptHandlerIsOffset {
		h += bi.b.BlobAddr
	}
	bi.deopt, bi.origPC = h, int64(o)
	return bi.deopt, bi.origPC
}

// method reads a Method* for an interpreted frame; nil if it is not plausible.
func (w *Walker) method(mp uint64) *methodInfo {
	if mp == 0 || mp%wordSize != 0 || mp < 4096 {
		return nil
	}
	l := w.l
	if !l.MethodConstMethod.OK || !l.ConstMethodCodeSize.OK || l.ConstMethodSize == 0 {
		return nil
	}
	cm, err := readUint(w.j.Mem, mp+l.MethodConstMethod.Offset, 8)
	if err != nil || cm == 0 || cm%wordSize != 0 {
		return nil
	}
	if m, ok := w.methods[mp]; ok && m.cm == cm {
		if !m.ok {
			return nil
		}
		return m
	}
	m := &methodInfo{cm: cm}
	w.methods[mp] = m
	size, err := readUint(w.j.Mem, cm+l.ConstMethodCodeSize.Offset, max(l.ConstMethodCodeSize.Size, 2))
	if err != nil || size > 65535 {
		return nil
	}
	if l.MethodAccessFlags.OK {
		flags, err := readUint(w.j.Mem, mp+l.MethodAccessFlags.Offset, l.MethodAccessFlags.Size)
		if err != nil {
			return nil
		}
		m.native = flags&accNative != 0
	}
	sig, err := w.cc.MethodName(mp)
	if err != nil || sig == "" {
		return nil
	}
	m.code, m.codeSize, m.sig, m.name = cm+l.ConstMethodSize, size, sig, javaname.Qualified(sig)
	m.method = mp
	m.ok = true
	return m
}

func (m *methodInfo) codeAt(bcp uint64) bool { return bcp >= m.code && bcp < m.code+m.codeSize }

// methodAt is method for an interpreted frame whose bcp (live or spilled) is one of bcps: a method
// already read in this view is taken without reading its ConstMethod* again when a bcp lies in its
// bytecodes, which only the same method's frame can have (a Method* freed with its class and reused
// would have other bytecodes). That read was a third of a live walk's reads.
func (w *Walker) methodAt(mp uint64, bcps ...uint64) *methodInfo {
	if m, ok := w.methods[mp]; ok && m.ok && !m.native {
		for _, bcp := range bcps {
			if m.codeAt(bcp) {
				return m
			}
		}
	}
	return w.method(mp)
}

// interpreterReturnAt is interpreterReturn of the interpreter's code at pc, kept by pc: the
// interpreter is generated once, at the JVM's start.
func (w *Walker) interpreterReturnAt(st *walkState, pc uint64) (interpreterState, bool) {
	if r, ok := w.interpReturns.get(pc); ok {
		return r.state, r.ok
	}
	code := st.code(pc, 40)
	state, ok := interpreterReturn(code)
	if len(code) == 40 {
		w.interpReturns.put(pc, interpReturn{state, ok})
	}
	return state, ok
}

type interpReturn struct {
	state interpreterState
	ok    bool
}

// javaThread returns the JavaThread* of a thread, reading the JVM's thread list again (at most
// every 100 ms) when the tid is not known.
func (w *Walker) javaThread(tid int) uint64 {
	if jt, ok := w.threads[tid]; ok {
		return jt
	}
	if w.threads != nil && time.Since(w.threadsRead) < 100*time.Millisecond {
		return 0
	}
	w.RefreshThreads()
	return w.threads[tid]
}

// RefreshThreads re-reads the JVM's thread list (tid to JavaThread); walks do it themselves for
// threads they do not know, at most every 100 ms.
func (w *Walker) RefreshThreads() {
	w.threadsRead = time.Now()
	threads, err := w.j.Threads()
	if err != nil && w.opts.Logger != nil {
		w.opts.Logger.Debug("unwind: read threads", "err", err)
	}
	if w.threads == nil || len(threads) > 0 {
		w.threads = map[int]uint64{}
	}
	for _, t := range threads {
		w.threads[t.TID] = t.JavaThread
		if t.HostTID != 0 {
			w.threads[t.HostTID] = t.JavaThread
		}
	}
}

// SetThreads tells the walker the threads' JavaThread* (tid to address), instead of reading the
// thread list: for recorded samples.
func (w *Walker) SetThreads(m map[int]uint64) {
	w.threads = m
	w.threadsRead = time.Now().Add(24 * time.Hour)
}

func readUint(m vmstructs.Memory, addr, size uint64) (uint64, error) {
	var buf [8]byte
	if size == 0 || size > 8 {
		size = 8
	}
	if _, err := m.ReadAt(buf[:size], addr); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(buf[:]), nil
}

// deadStack is how far below a sample's sp reads are refused: the thread's own stack, whose
// contents there were dead at the sample.
const deadStack = 1 << 20

var (
	errDeadStack    = errors.New("read below the sampled stack pointer")
	errStackChanged = errors.New("the stack beyond the sample's copy changed since")
)

// stackMem serves reads of the sampled stack from its copy and the rest from the process.
type stackMem struct {
	base vmstructs.Memory
	lo   uint64
	data []byte
	// checked says whether the stack beyond the copy was compared with the copy; changed, that it
	// differed; beyond, that a word was read beyond the copy.
	checked, changed, beyond bool
	// at is the sp of the frame the walk is in: the frame that reaches beyond the copy when a read
	// first does.
	at uint64
}

// tailCheck is how many of the copy's last bytes must still be in memory for reads beyond it.
const tailCheck = 64

// stillThere reports whether the copy's last bytes, and the first bytes of the frame that reaches
// beyond it, are still in the thread's stack. The end of the copy alone does not show that the frames
// beyond it are the sample's when it falls in a large buffer on the stack that nobody wrote since (JDK
// 11's socketRead0 and socketWrite0 keep 64 KiB there: another call at the same depth leaves the bytes
// but not the frames); the bottom of that frame holds what its call put there (its saved registers,
// arguments, the start of such a buffer), which a frame of another call almost never repeats.
func (m *stackMem) stillThere() bool {
	n := min(len(m.data), tailCheck)
	if n == 0 {
		return true
	}
	same := func(at uint64, n int) bool {
		buf := make([]byte, n)
		if k, err := m.base.ReadAt(buf, at); err != nil || k != n {
			return false
		}
		return bytes.Equal(buf, m.data[at-m.lo:at-m.lo+uint64(n)])
	}
	end := m.lo + uint64(len(m.data))
	if !same(end-uint64(n), n) {
		return false
	}
	if m.at >= m.lo && m.at < end-uint64(n) {
		return same(m.at, int(min(uint64(tailCheck), end-uint64(n)-m.at)))
	}
	return true
}

func (m *stackMem) u64(addr uint64) (uint64, error) {
	if addr >= m.lo && addr-m.lo+8 <= uint64(len(m.data)) {
		return binary.LittleEndian.Uint64(m.data[addr-m.lo:]), nil
	}
	if len(m.data) > 0 && addr < m.lo && m.lo-addr <= deadStack {
		// Below the sampled sp: dead when the sample was taken and overwritten since.
		return 0, errDeadStack
	}
	if len(m.data) > 0 && addr >= m.lo && addr-m.lo < maxStackSpan {
		// Beyond the copy: the thread's live stack, the sample's only as long as the frames there are
		// still active. They are if the copy's last bytes are still there (a frame that returned or
		// ran on would have changed them): checked once per walk.
		if !m.checked {
			m.checked = true
			m.changed = !m.stillThere()
		}
		if m.changed {
			return 0, errStackChanged
		}
		m.beyond = true
	}
	var buf [8]byte
	if _, err := m.base.ReadAt(buf[:], addr); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(buf[:]), nil
}
