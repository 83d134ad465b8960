package vmstructs

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/jvmkit/jvmkit/internal/procfs"
)

// Thread is one of the JVM's Java threads (a HotSpot JavaThread: application threads and the JVM's
// own Java-level threads such as "Reference Handler" and the compiler threads).
type Thread struct {
	// Name is java.lang.Thread.name. When libjvm has no .symtab (so the Java field offsets are
	// unknown) or the thread object could not be read, a live JVM's threads are named after
	// /proc/<pid>/task/<tid>/comm instead: at most 15 bytes of the Java name, and "java" for the
	// main thread; NameTruncated is then set. A core file's are then empty.
	Name          string `json:"name"`
	NameTruncated bool   `json:"name_truncated,omitempty"`
	// TID is OSThread::_thread_id: the thread's id in the JVM's own pid namespace (jstack's nid).
	TID int `json:"tid"`
	// HostTID is the same thread's id in the pid namespace of the reader's /proc, for live JVMs;
	// it differs from TID when the JVM runs in a container. 0 when unknown (core files).
	HostTID int `json:"host_tid,omitempty"`
	// ID is java.lang.Thread.tid, the Java thread id (jstack's #n); 0 when unknown.
	ID int64 `json:"id,omitempty"`
	// JavaThread is the address of the JavaThread (jstack's tid=0x...).
	JavaThread uint64 `json:"java_thread"`
	// State is the VM's JavaThreadState without its "_thread_" prefix: in_Java, in_vm, in_native,
	// blocked, new, uninitialized, or one of them with "_trans" (changing state).
	State string `json:"state"`
	// JavaState is java.lang.Thread.State (NEW, RUNNABLE, BLOCKED, WAITING, TIMED_WAITING,
	// TERMINATED) from the thread object's threadStatus; empty when unknown.
	JavaState string `json:"java_state,omitempty"`
	// Daemon is java.lang.Thread's daemon flag; false when unknown.
	Daemon bool `json:"daemon"`
	// The thread's last Java frame (JavaThread::_anchor), set while it runs outside Java code
	// (in the VM, native code or blocked); zero while it runs Java code or has no Java frames.
	LastJavaSP uint64 `json:"last_java_sp,omitempty"`
	LastJavaPC uint64 `json:"last_java_pc,omitempty"`
	LastJavaFP uint64 `json:"last_java_fp,omitempty"`
}

// maxThreads bounds the thread list: a longer one is damaged memory.
const maxThreads = 100_000

// SkippedThreadsError is returned by Threads together with the threads it could read when some
// entries of the thread list could not be read or were not plausible: threads that exited (and
// whose memory was freed) while the list was read, which the JVM does not stop for a reader.
type SkippedThreadsError struct {
	Skipped, Total int
	Err            error // why the first one was skipped
}

func (e *SkippedThreadsError) Error() string {
	return fmt.Sprintf("vmstructs: threads: skipped %d of %d threads (exited while read?): %v", e.Skipped, e.Total, e.Err)
}

func (e *SkippedThreadsError) Unwrap() error { return e.Err }

// threadLayout is what Threads needs from VMStructs, resolved once per call.
type threadLayout struct {
	list, length, array F // ThreadsSMRSupport::_java_thread_list, ThreadsList::{_length,_threads} (JDK 12+)
	head, next, count   F // else Threads::{_thread_list,_number_of_threads}, JavaThread::_next (JDK 11)
	linked              bool
	osthread, tid       F // JavaThread|Thread::_osthread, OSThread::_thread_id
	state, anchor       F // JavaThread::{_thread_state,_anchor}
	sp, pc, fp          F // JavaFrameAnchor::_last_Java_{sp,pc,fp}
	size                uint64
	states              map[int64]string

	// The thread object, all optional: names need .symtab.
	threadObj  F    // JavaThread::_threadObj
	handle     bool // _threadObj is an OopHandle (JDK 16+), not an oop
	handleObj  uint64
	heap       *javaHeap
	str        stringLayout
	nameOK     bool
	name, tidJ uint64 // java.lang.Thread.{name,tid}
	eetop      uint64 // java.lang.Thread.eetop: the JavaThread*, to recognise the right object
	holder     uint64 // java.lang.Thread.holder (JDK 19+): daemon and status moved to a FieldHolder
	daemon     uint64
	status     uint64
	objSize    uint64 // bytes of the Thread object that hold all of the above
}

func (j *JVM) threadLayout() (*threadLayout, error) {
	r := j.resolver()
	l := &threadLayout{
		osthread: r.field("JavaThread|Thread", "_osthread"),
		tid:      r.field("OSThread", "_thread_id"),
		state:    r.field("JavaThread", "_thread_state"),
		anchor:   r.field("JavaThread", "_anchor"),
		sp:       r.field("JavaFrameAnchor", "_last_Java_sp"),
		pc:       r.field("JavaFrameAnchor", "_last_Java_pc"),
		fp:       r.optField("JavaFrameAnchor", "_last_Java_fp"),
		size:     r.typeSize("JavaThread"),
	}
	// JDK 10 and 11 keep the SMR lists unexported but still link every JavaThread into
	// Threads::_thread_list; JDK 12 dropped that list and exports the SMR one.
	l.head, l.next = r.optField("Threads", "_thread_list"), r.optField("JavaThread", "_next")
	if l.list = r.optField("ThreadsSMRSupport", "_java_thread_list"); l.list.OK || !l.head.OK || !l.next.OK {
		l.list = r.field("ThreadsSMRSupport", "_java_thread_list")
		l.length = j.cvWidth(r.field("ThreadsList", "_length"))
		l.array = r.field("ThreadsList", "_threads")
	} else {
		l.linked = true
		l.count = j.cvWidth(r.optField("Threads", "_number_of_threads"))
	}
	if err := r.err("threads"); err != nil {
		return nil, err
	}
	l.tid, l.state = j.cvWidth(l.tid), j.cvWidth(l.state)
	for _, f := range []*F{&l.length, &l.count, &l.tid, &l.state} {
		if f.Size == 0 {
			f.Size = 4 // uint, pid_t and an enum on every JDK so far
		}
		if f.Size > 8 {
			return nil, fmt.Errorf("vmstructs: threads: %s::%s is %d bytes wide", f.Type, f.Name, f.Size)
		}
	}
	for _, f := range []F{l.osthread, l.state, l.anchor} {
		if f.Offset+8 > l.size {
			return nil, fmt.Errorf("vmstructs: threads: JavaThread::%s at %d is outside the object (%d bytes)", f.Name, f.Offset, l.size)
		}
	}
	if l.size > 1<<16 || l.anchor.Offset+24 > l.size {
		return nil, fmt.Errorf("vmstructs: threads: JavaThread layout is implausible")
	}
	l.states = threadStates(j.Table)
	l.nameLayout(j)
	return l, nil
}

// cvWidth fills in the width of a field whose type string carries a qualifier that the types
// table does not list ("const uint" for ThreadsList::_length on 17 and 25).
func (j *JVM) cvWidth(f F) F {
	if f.Size != 0 {
		return f
	}
	ts := ""
	if e, ok := j.Table.Field(f.Type, f.Name); ok {
		ts = e.TypeString
	}
	for {
		t := strings.TrimSpace(ts)
		if u, ok := strings.CutPrefix(t, "const "); ok {
			ts = u
		} else if u, ok := strings.CutPrefix(t, "volatile "); ok {
			ts = u
		} else if u, ok := strings.CutSuffix(t, " const"); ok {
			ts = u
		} else if u, ok := strings.CutSuffix(t, " volatile"); ok {
			ts = u
		} else {
			break
		}
	}
	f.Size = j.width(ts)
	return f
}

// threadStates maps JavaThreadState values to names, from the int constants where the JVM exports
// them (it does on 17 and 25, with the values of globalDefinitions.hpp used as the fallback).
func threadStates(t *Table) map[int64]string {
	m := map[int64]string{
		0: "uninitialized", 2: "new", 3: "new_trans", 4: "in_native", 5: "in_native_trans",
		6: "in_vm", 7: "in_vm_trans", 8: "in_Java", 9: "in_Java_trans", 10: "blocked", 11: "blocked_trans",
	}
	var exported map[int64]string
	for _, c := range t.Ints {
		if name, ok := strings.CutPrefix(c.Name, "_thread_"); ok && name != "" && c.Name != "_thread_max_state" {
			if exported == nil {
				exported = map[int64]string{}
			}
			exported[c.Value] = name
		}
	}
	if exported != nil {
		return exported
	}
	return m
}

// nameLayout resolves the optional parts: the thread object and its Java fields.
func (l *threadLayout) nameLayout(j *JVM) {
	l.threadObj = j.resolver().optField("JavaThread", "_threadObj")
	if !l.threadObj.OK {
		return
	}
	ts, _ := j.Table.Field(l.threadObj.Type, l.threadObj.Name)
	switch strings.TrimSpace(ts.TypeString) {
	case "OopHandle":
		l.handle = true
		if f, ok := j.lookupField("OopHandle", "_obj"); ok {
			l.handleObj = f.Offset
		}
	case "oop":
	default:
		return
	}
	h, err := j.javaHeap()
	if err != nil {
		return
	}
	l.heap = h
	var ok1, ok2, ok3 bool
	l.str, ok1 = j.stringLayout()
	l.name, ok2 = j.javaOffset("java_lang_Thread", "_name_offset")
	l.eetop, ok3 = j.javaOffset("java_lang_Thread", "_eetop_offset")
	l.nameOK = ok1 && ok2 && ok3
	l.tidJ, _ = j.javaOffset("java_lang_Thread", "_tid_offset")
	if hold, ok := j.javaOffset("java_lang_Thread", "_holder_offset"); ok {
		l.holder = hold
		l.daemon, _ = j.javaOffset("java_lang_Thread_FieldHolder", "_daemon_offset")
		l.status, _ = j.javaOffset("java_lang_Thread_FieldHolder", "_thread_status_offset")
	} else {
		l.daemon, _ = j.javaOffset("java_lang_Thread", "_daemon_offset")
		l.status, _ = j.javaOffset("java_lang_Thread", "_thread_status_offset")
	}
	l.objSize = max(l.name, l.eetop, l.tidJ, l.holder) + 8
	if l.holder == 0 {
		l.objSize = max(l.objSize, l.daemon+1, l.status+4)
	}
}

// Threads lists the JVM's Java threads, read from ThreadsSMRSupport::_java_thread_list (JDK 12+) or
// Threads::_thread_list (JDK 11) without stopping the JVM. Threads come and go while the list is read: the list is re-read when it was
// replaced meanwhile, and entries that cannot be read or are not plausible are skipped; then the
// threads that were read are returned with a *SkippedThreadsError.
//
// Names and the Java-level fields (ID, JavaState, Daemon) come from the java.lang.Thread object and
// need libjvm's .symtab (see Thread.Name for what happens without it). For a live JVM (PID != 0),
// HostTID and the fallback names come from /proc/<pid>/task.
func (j *JVM) Threads() ([]Thread, error) {
	l, err := j.threadLayout()
	if err != nil {
		return nil, err
	}
	list, ptrs, err := j.threadList(l)
	if err != nil {
		return nil, err
	}
	var tasks *taskInfo
	if j.PID != 0 {
		tasks = readTasks(j.PID)
	}
	out := make([]Thread, 0, len(ptrs))
	var skipped int
	var first error
	for _, p := range ptrs {
		t, named, err := j.readThread(l, p)
		if err != nil {
			skipped++
			if first == nil {
				first = err
			}
			continue
		}
		tasks.enrich(j.PID, &t, named)
		out = append(out, t)
	}
	// A thread leaves the list before its JavaThread is freed. If the list is still the same, every
	// thread was alive while it was read; else the threads that left may have been freed under the
	// reader, and what was read of them is dropped.
	if again, err := j.threadListToken(l); err == nil && again != list {
		if _, now, err := j.threadList(l); err == nil {
			alive := make(map[uint64]bool, len(now))
			for _, p := range now {
				alive[p] = true
			}
			kept := out[:0]
			for _, t := range out {
				if alive[t.JavaThread] {
					kept = append(kept, t)
				} else {
					skipped++
					if first == nil {
						first = fmt.Errorf("JavaThread %#x exited while it was read", t.JavaThread)
					}
				}
			}
			out = kept
		}
	}
	if skipped > 0 {
		return out, &SkippedThreadsError{Skipped: skipped, Total: len(ptrs), Err: first}
	}
	return out, nil
}

// threadList returns the JavaThread pointers of the current thread list and a token that changes
// when the list does (see threadListToken).
func (j *JVM) threadList(l *threadLayout) (token uint64, ptrs []uint64, err error) {
	if l.linked {
		return j.linkedThreadList(l)
	}
	return j.smrThreadList(l)
}

// threadListToken reads the token of the current thread list, to tell whether it changed since
// threadList: the published ThreadsList's address, or a hash of a linked list's members.
func (j *JVM) threadListToken(l *threadLayout) (uint64, error) {
	if l.linked {
		ptrs, err := j.walkThreadList(l)
		slices.Reverse(ptrs)
		return hashPtrs(ptrs), err
	}
	return j.static(l.list)
}

// smrThreadList reads the current ThreadsList's JavaThread pointers. A ThreadsList is immutable while
// it is published; a thread starting or exiting publishes a new one and frees the old one once no
// hazard pointer protects it. This reader sets no hazard pointer, so it checks that the list it read
// was still the published one afterwards, and retries when it was replaced.
func (j *JVM) smrThreadList(l *threadLayout) (list uint64, ptrs []uint64, err error) {
	var lastErr error
	for range 16 {
		list, err = j.static(l.list)
		if err != nil {
			return 0, nil, fmt.Errorf("vmstructs: threads: read ThreadsSMRSupport::_java_thread_list: %w", err)
		}
		if list == 0 {
			return 0, nil, fmt.Errorf("vmstructs: threads: no thread list (JVM starting or exiting)")
		}
		// The list may have been freed since: failed reads are retried like a changed pointer.
		n, err := j.get(list, l.length)
		if err != nil {
			lastErr = fmt.Errorf("vmstructs: threads: read ThreadsList length: %w", err)
			continue
		}
		if n > maxThreads {
			lastErr = fmt.Errorf("vmstructs: threads: thread list length %d is implausible", n)
			continue
		}
		arr, err := j.get(list, l.array)
		if err != nil {
			lastErr = fmt.Errorf("vmstructs: threads: read ThreadsList array: %w", err)
			continue
		}
		var b []byte
		if n > 0 {
			if b, err = j.r.bytes(arr, int(n)*8); err != nil {
				lastErr = fmt.Errorf("vmstructs: threads: read %d thread pointers: %w", n, err)
				continue
			}
		}
		again, err := j.static(l.list)
		if err != nil {
			return 0, nil, fmt.Errorf("vmstructs: threads: read ThreadsSMRSupport::_java_thread_list: %w", err)
		}
		// The same address is not proof of the same list: a list freed under the reader and a new one
		// allocated in its place (malloc reuses a chunk of that size at once under thread churn) read
		// as one, its length of one and its elements of another (seen: 132 stable threads of 20). So
		// the length and the array are read again too, and the elements must be distinct threads.
		n2, err2 := j.get(list, l.length)
		arr2, err3 := j.get(list, l.array)
		if again != list || err2 != nil || err3 != nil || n2 != n || arr2 != arr {
			lastErr = fmt.Errorf("vmstructs: threads: the thread list kept changing")
			continue
		}
		ptrs = make([]uint64, n)
		for i := range ptrs {
			ptrs[i] = leUint(b, uint64(i)*8, 8)
		}
		if !distinctThreads(ptrs) {
			lastErr = fmt.Errorf("vmstructs: threads: the thread list kept changing (a list read while it was replaced)")
			continue
		}
		return list, ptrs, nil
	}
	return 0, nil, lastErr
}

// distinctThreads tells whether ptrs can be a ThreadsList: no null and no JavaThread twice.
func distinctThreads(ptrs []uint64) bool {
	seen := make(map[uint64]bool, len(ptrs))
	for _, p := range ptrs {
		if p == 0 || seen[p] {
			return false
		}
		seen[p] = true
	}
	return true
}

// linkedThreadList reads JDK 11's Threads::_thread_list, linked through JavaThread::_next. Threads
// are prepended and unlinked under Threads_lock, which this reader does not hold, and an unlinked
// JavaThread is freed once no hazard pointer protects it: a walk can follow a stale _next. So the
// list is walked until two walks in a row agree with each other and with Threads::_number_of_threads.
// Under heavy thread churn that may never happen: then the threads that both of the last two walks
// met are returned, each checked by readThread, and Threads drops those that left meanwhile.
func (j *JVM) linkedThreadList(l *threadLayout) (token uint64, ptrs []uint64, err error) {
	const attempts = 32
	prev, err := j.walkThreadList(l)
	var cur []uint64
	for range attempts {
		cur, err = j.walkThreadList(l)
		switch {
		case err != nil:
		case !slices.Equal(prev, cur):
		case l.count.OK:
			if n, cerr := j.static(l.count); cerr == nil && n == uint64(len(cur)) {
				return linkedResult(cur)
			}
		default:
			return linkedResult(cur)
		}
		prev = cur
	}
	if err != nil {
		return 0, nil, err
	}
	// Both of the last walks succeeded but never agreed: keep what they have in common.
	in := make(map[uint64]bool, len(prev))
	for _, p := range prev {
		in[p] = true
	}
	both := cur[:0:0]
	for _, p := range cur {
		if in[p] {
			both = append(both, p)
		}
	}
	return linkedResult(both)
}

// linkedResult puts a walk in creation order (Threads::add prepends), oldest first as the SMR lists
// and jcmd order threads.
func linkedResult(ptrs []uint64) (uint64, []uint64, error) {
	ptrs = slices.Clone(ptrs)
	slices.Reverse(ptrs)
	return hashPtrs(ptrs), ptrs, nil
}

// walkThreadList follows Threads::_thread_list once.
func (j *JVM) walkThreadList(l *threadLayout) ([]uint64, error) {
	p, err := j.static(l.head)
	if err != nil {
		return nil, fmt.Errorf("vmstructs: threads: read Threads::_thread_list: %w", err)
	}
	if p == 0 {
		return nil, fmt.Errorf("vmstructs: threads: no thread list (JVM starting or exiting)")
	}
	var ptrs []uint64
	seen := map[uint64]bool{}
	for p != 0 {
		if p&7 != 0 || seen[p] || len(ptrs) >= maxThreads {
			return nil, fmt.Errorf("vmstructs: threads: the thread list is damaged at %#x (after %d threads)", p, len(ptrs))
		}
		seen[p] = true
		ptrs = append(ptrs, p)
		if p, err = j.get(p, l.next); err != nil {
			return nil, fmt.Errorf("vmstructs: threads: read JavaThread::_next: %w", err)
		}
	}
	return ptrs, nil
}

// hashPtrs is FNV-1a over a list of pointers.
func hashPtrs(ptrs []uint64) uint64 {
	h := uint64(14695981039346656037)
	for _, p := range ptrs {
		for i := range 8 {
			h ^= p >> (8 * i) & 0xff
			h *= 1099511628211
		}
	}
	return h
}

// readThread reads one JavaThread. The object is read in one piece, the OSThread and the thread
// object after it.
func (j *JVM) readThread(l *threadLayout, p uint64) (t Thread, named bool, err error) {
	if p == 0 || p&7 != 0 {
		return Thread{}, false, fmt.Errorf("JavaThread pointer %#x", p)
	}
	b, err := j.r.bytes(p, int(l.size))
	if err != nil {
		return Thread{}, false, fmt.Errorf("read JavaThread %#x: %w", p, err)
	}
	t = Thread{JavaThread: p}
	st := int64(int32(leUint(b, l.state.Offset, l.state.Size)))
	name, ok := l.states[st]
	if !ok {
		return Thread{}, false, fmt.Errorf("JavaThread %#x: state %d is not a JavaThreadState", p, st)
	}
	t.State = name
	a := l.anchor.Offset
	t.LastJavaSP = leUint(b, a+l.sp.Offset, 8)
	t.LastJavaPC = leUint(b, a+l.pc.Offset, 8)
	if l.fp.OK {
		t.LastJavaFP = leUint(b, a+l.fp.Offset, 8)
	}
	ost := leUint(b, l.osthread.Offset, 8)
	if ost == 0 {
		return Thread{}, false, fmt.Errorf("JavaThread %#x has no OSThread", p)
	}
	tid, err := j.getInt(ost, l.tid)
	if err != nil {
		return Thread{}, false, fmt.Errorf("JavaThread %#x: read OSThread: %w", p, err)
	}
	// pid_max is at most 2^22 on Linux.
	if tid <= 0 || tid > 1<<22 {
		return Thread{}, false, fmt.Errorf("JavaThread %#x: tid %d is implausible", p, tid)
	}
	t.TID = int(tid)
	if l.threadObj.OK && l.heap != nil {
		named = j.readThreadObject(l, b, &t)
	}
	return t, named, nil
}

// readThreadObject fills in what comes from the java.lang.Thread and reports whether it read the
// name. Any failure leaves the fields empty: the object may be gone or moving, and the VM-level data
// stays valid.
func (j *JVM) readThreadObject(l *threadLayout, b []byte, t *Thread) bool {
	h := l.heap
	var obj uint64
	var err error
	if l.handle {
		// An OopHandle holds the address of the oop's slot in an OopStorage.
		slot := leUint(b, l.threadObj.Offset+l.handleObj, 8)
		if slot == 0 {
			return false
		}
		obj, err = h.root(slot)
	} else {
		v := leUint(b, l.threadObj.Offset, 8)
		obj, err = h.uncolor(v)
	}
	if err != nil || obj == 0 {
		return false
	}
	o, err := h.object(obj, l.objSize)
	if err != nil {
		return false
	}
	if l.eetop != 0 {
		// The object's eetop points back at its JavaThread (0 once the thread has terminated): a
		// mismatch means a stale reference to some other object.
		if e, _ := o.uint(l.eetop, 8); e != 0 && e != t.JavaThread {
			return false
		}
	}
	if l.tidJ != 0 {
		id, _ := o.uint(l.tidJ, 8)
		t.ID = int64(id)
	}
	fields := o
	if l.holder != 0 {
		fields = object{}
		if fh, err := o.ref(l.holder); err == nil && fh != 0 {
			fields, _ = h.object(fh, max(l.daemon+1, l.status+4))
		}
	}
	if l.daemon != 0 {
		if d, ok := fields.uint(l.daemon, 1); ok {
			t.Daemon = d != 0
		}
	}
	if l.status != 0 {
		if s, ok := fields.uint(l.status, 4); ok {
			t.JavaState = javaThreadState(uint32(s))
		}
	}
	if !l.nameOK {
		return false
	}
	s, err := o.ref(l.name)
	if err != nil || s == 0 {
		return false
	}
	name, trunc, err := h.javaString(s, l.str)
	if err != nil {
		return false
	}
	t.Name, t.NameTruncated = name, trunc
	return true
}

// javaThreadState maps java.lang.Thread.threadStatus, a JVMTI thread state bit set (the
// JavaThreadStatus constants are combinations of them), to java.lang.Thread.State the way
// jdk.internal.misc.VM.toThreadState does.
func javaThreadState(s uint32) string {
	const (
		alive          = 0x0001
		terminated     = 0x0002
		runnable       = 0x0004
		waitIndefinite = 0x0010
		waitTimeout    = 0x0020
		blockedEnter   = 0x0400
	)
	switch {
	case s&runnable != 0:
		return "RUNNABLE"
	case s&blockedEnter != 0:
		return "BLOCKED"
	case s&waitIndefinite != 0:
		return "WAITING"
	case s&waitTimeout != 0:
		return "TIMED_WAITING"
	case s&terminated != 0:
		return "TERMINATED"
	case s&alive == 0:
		return "NEW"
	}
	return "RUNNABLE"
}

// taskInfo maps the JVM's own tids to tids in the reader's pid namespace, for a live JVM.
type taskInfo struct {
	host map[int]int // namespaced tid -> host tid; nil: same namespace
}

// readTasks reads /proc/<pid>/task/*/status when the JVM is in another pid namespace: their NSpid
// lines list a thread's id in every namespace, outermost (the reader's /proc) first.
func readTasks(pid int) *taskInfo {
	st, err := procfs.Default.Status(pid)
	if err != nil || len(st.NSpid) <= 1 {
		return &taskInfo{}
	}
	ti := &taskInfo{host: map[int]int{}}
	ents, err := os.ReadDir(procfs.Default.Path(pid, "task"))
	if err != nil {
		return ti
	}
	for i, e := range ents {
		if i >= maxThreads {
			break
		}
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(procfs.Default.Path(pid, "task", e.Name(), "status"))
		if err != nil {
			continue
		}
		s, err := procfs.ParseStatus(b)
		if err != nil || len(s.NSpid) == 0 {
			continue
		}
		ti.host[s.NSPID()] = tid
	}
	return ti
}

// enrich sets HostTID and, when the thread object gave no name, names the thread after its comm.
func (ti *taskInfo) enrich(pid int, t *Thread, named bool) {
	if ti == nil {
		return
	}
	if ti.host == nil {
		t.HostTID = t.TID
	} else {
		t.HostTID = ti.host[t.TID]
	}
	if named || t.HostTID == 0 {
		return
	}
	b, err := os.ReadFile(procfs.Default.Path(pid, "task", strconv.Itoa(t.HostTID), "comm"))
	if err != nil {
		return
	}
	t.Name, t.NameTruncated = string(bytes.TrimSuffix(b, []byte("\n"))), true
}
