package vmstructs

import "fmt"

// FrameLayout is what a stack walker (package unwind) needs from VMStructs beyond the code cache:
// where entry frames, frame anchors, interpreter frames and deoptimised nmethods keep their state.
// Offsets are in bytes; fields this JVM does not export are left unset (their F.OK is false).
type FrameLayout struct {
	// CallStubReturn is StubRoutines::_call_stub_return_address: the return address of the entry
	// frame through which the VM calls Java code (JavaCalls::call_helper).
	CallStubReturn uint64
	// EntryFrameCallWrapper is frame::entry_frame_call_wrapper_offset, in words from the entry frame's
	// fp: where the JavaCallWrapper* is stored.
	EntryFrameCallWrapper int64
	// CallWrapperAnchor is JavaCallWrapper::_anchor: the anchor of the Java code below the call.
	CallWrapperAnchor uint64
	// ThreadAnchor is JavaThread::_anchor; AnchorSP, AnchorPC and AnchorFP are the
	// JavaFrameAnchor::_last_Java_{sp,pc,fp} offsets within an anchor.
	ThreadAnchor                 uint64
	AnchorSP, AnchorPC, AnchorFP uint64
	// VframeArrayHead is JavaThread::_vframe_array_head: non-null while the thread's frames are being
	// deoptimised.
	VframeArrayHead F

	// Method and ConstMethod, for interpreted frames: Method::_constMethod and _access_flags,
	// ConstMethod::_code_size, sizeof(ConstMethod) (the bytecodes follow the ConstMethod).
	MethodConstMethod, MethodAccessFlags F
	ConstMethodCodeSize                  F
	ConstMethodSize                      uint64

	// OrigPCOffset is nmethod::_orig_pc_offset: where a deoptimised frame keeps its original pc,
	// relative to the frame's sp. DeoptHandler is CompiledMethod::_deopt_handler_begin (a pointer,
	// JDK 9-22) or nmethod::_deopt_handler_offset (relative to the blob, JDK 23+;
	// DeoptHandlerIsOffset).
	OrigPCOffset, DeoptHandler F
	DeoptHandlerIsOffset       bool

	// InterpreterLow and InterpreterHigh bound the template interpreter's code
	// (AbstractInterpreter::_code, a StubQueue: _stub_buffer to _stub_buffer + _buffer_limit); 0 when
	// unknown.
	InterpreterLow, InterpreterHigh uint64

	// ContinuationReturnPC is ContinuationEntry::_return_pc (JDK 21+): the return address at the
	// bottom of a mounted virtual thread's frames; 0 when not exported.
	ContinuationReturnPC uint64
}

// FrameLayout resolves the frame layout. The entries that every walk needs (the call stub's return
// address, the anchors, the entry frame's call wrapper) are required; the others are optional.
func (j *JVM) FrameLayout() (*FrameLayout, error) {
	r := j.resolver()
	csr := r.field("StubRoutines", "_call_stub_return_address")
	wrapper := r.intConst("frame::entry_frame_call_wrapper_offset")
	cwAnchor := r.field("JavaCallWrapper", "_anchor")
	tAnchor := r.field("JavaThread", "_anchor")
	sp := r.field("JavaFrameAnchor", "_last_Java_sp")
	pc := r.field("JavaFrameAnchor", "_last_Java_pc")
	fp := r.field("JavaFrameAnchor", "_last_Java_fp")
	l := &FrameLayout{
		EntryFrameCallWrapper: wrapper,
		CallWrapperAnchor:     cwAnchor.Offset,
		ThreadAnchor:          tAnchor.Offset,
		AnchorSP:              sp.Offset,
		AnchorPC:              pc.Offset,
		AnchorFP:              fp.Offset,
		VframeArrayHead:       r.optField("JavaThread", "_vframe_array_head"),
		MethodConstMethod:     r.optField("Method", "_constMethod"),
		MethodAccessFlags:     r.optField("Method", "_access_flags"),
		ConstMethodCodeSize:   r.optField("ConstMethod", "_code_size"),
		OrigPCOffset:          r.optField("nmethod", "_orig_pc_offset"),
		DeoptHandler:          r.optField("nmethod|CompiledMethod", "_deopt_handler_begin|_deopt_handler_offset|_deopt_handler_entry_offset"),
	}
	if t, ok := j.Table.Type("ConstMethod"); ok {
		l.ConstMethodSize = t.Size
	}
	if err := r.err("stack walking"); err != nil {
		return nil, err
	}
	l.DeoptHandlerIsOffset = l.DeoptHandler.OK && l.DeoptHandler.Name != "_deopt_handler_begin"
	if l.MethodAccessFlags.OK && l.MethodAccessFlags.Size == 0 {
		l.MethodAccessFlags.Size = 4 // AccessFlags is a class holding one jint (u2 on JDK 25)
		if t, ok := j.Table.Type("AccessFlags"); ok && t.Size > 0 && t.Size <= 4 {
			l.MethodAccessFlags.Size = t.Size
		}
	}
	var err error
	if l.CallStubReturn, err = j.static(csr); err != nil {
		return nil, fmt.Errorf("vmstructs: read StubRoutines::_call_stub_return_address: %w", err)
	}
	if l.CallStubReturn == 0 {
		return nil, fmt.Errorf("vmstructs: StubRoutines::_call_stub_return_address is null: %w", ErrNotInitialized)
	}
	if l.EntryFrameCallWrapper < -64 || l.EntryFrameCallWrapper > 64 || l.CallWrapperAnchor > 1024 ||
		l.ThreadAnchor > 1<<16 || max(l.AnchorSP, l.AnchorPC, l.AnchorFP) > 64 {
		return nil, fmt.Errorf("vmstructs: stack walking: implausible frame layout %+v", *l)
	}
	if code := r.optField("AbstractInterpreter", "_code"); code.OK {
		buf := r.optField("StubQueue", "_stub_buffer")
		limit := r.optField("StubQueue", "_buffer_limit")
		if q, err := j.static(code); err == nil && q != 0 && buf.OK && limit.OK {
			lo, err1 := j.get(q, buf)
			n, err2 := j.getInt(q, limit)
			if err1 == nil && err2 == nil && lo != 0 && n > 0 && n < 1<<30 {
				l.InterpreterLow, l.InterpreterHigh = lo, lo+uint64(n)
			}
		}
	}
	if ret := r.optField("ContinuationEntry", "_return_pc"); ret.OK {
		l.ContinuationReturnPC, _ = j.static(ret)
	}
	return l, nil
}

// WithMemory returns a JVM that shares j's table and libjvm symbols and reads m instead of j's
// memory: a wrapper of it that records what a walk reads, or a cache. Closing it closes nothing.
func (j *JVM) WithMemory(m Memory) *JVM {
	c := &JVM{PID: j.PID, LibJVM: j.LibJVM, Bias: j.Bias, Mem: m, Table: j.Table, syms: j.syms, r: reader{m}, moreSyms: j.moreSyms}
	return c
}

// NewRecordedJVM returns a JVM made of a recorded table, the libjvm symbols it needs (relocated, as
// CodeCacheSymbols returns them) and a memory image: no process or core file behind it. Package
// unwind replays recorded samples with it.
func NewRecordedJVM(t *Table, syms map[string]uint64, m Memory) *JVM {
	s := make(map[string]uint64, len(syms))
	for k, v := range syms {
		s[k] = v
	}
	return &JVM{Mem: m, Table: t, syms: s, r: reader{m}}
}

// CodeCacheSymbols returns the libjvm symbols (relocated) that reading the code cache looks up: the
// vtables of the CodeBlob classes, which tell the kind of a blob before JDK 23. Together with the
// table they are what NewRecordedJVM needs besides memory.
func (j *JVM) CodeCacheSymbols() map[string]uint64 {
	out := map[string]uint64{}
	if _, ok := j.Table.Field("CodeBlob", "_kind"); ok {
		return out
	}
	for sym := range blobVtables {
		if a, ok := j.Symbol(sym); ok {
			out[sym] = a
		}
	}
	return out
}
