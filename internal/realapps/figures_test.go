package realapps

import (
	"strings"
	"testing"
)

func stack(count int64, frames string) ProfileStack {
	return ProfileStack{Frames: strings.Split(frames, ";"), Count: count}
}

// The stacks are shaped like jvmkit profile's on Jetty (JDK 17): root first, compiled frames "_[j]",
// inlined "_[i]", kernel "_[k]", interpreted frames unmarked.
func TestAnalyze(t *testing.T) {
	p := &Profile{Samples: 20, Broken: 3, Stacks: []ProfileStack{
		// A right stack: writev0 over writev.
		stack(4, "java.lang.Thread.run;sun.nio.ch.IOUtil.write;sun.nio.ch.SocketDispatcher.writev;sun.nio.ch.FileDispatcherImpl.writev0_[j];writev;entry_SYSCALL_64_after_hwframe_[k];do_syscall_64_[k];do_writev_[k]"),
		// Another call's Java frames: park over write.
		stack(2, "java.lang.Thread.run;org.eclipse.jetty.util.thread.strategy.EatWhatYouKill.tryProduce;jdk.internal.misc.Unsafe.park_[j];__write;entry_SYSCALL_64_after_hwframe_[k];do_syscall_64_[k];exit_to_user_mode_loop_[k]"),
		// The kernel names the call: epoll_ctl under EPoll.wait is wrong.
		stack(1, "java.lang.Thread.run;sun.nio.ch.EPoll.wait_[j];[libc.so.6];entry_SYSCALL_64_after_hwframe_[k];do_syscall_64_[k];__x64_sys_epoll_ctl_[k]"),
		// A broken stack with a reason frame, and an address that names nothing.
		stack(2, "qtp-13;[bad-return-address];sun.nio.ch.FileDispatcherImpl.writev0_[j];statx;entry_SYSCALL_64_after_hwframe_[k];do_syscall_64_[k]"),
		stack(1, "qtp-18;[no-java-frames];[native 0x6a2d74736574722f];readlink;entry_SYSCALL_64_after_hwframe_[k];do_syscall_64_[k]"),
		// A signal handler's call and the JVM's futex under a native method are no wrong attribution.
		stack(1, "java.lang.Thread.run;sun.nio.ch.SocketDispatcher.read0_[j];__restore_rt;PosixSignals::SR_handler;sigsuspend;entry_SYSCALL_64_after_hwframe_[k];do_syscall_64_[k]"),
		stack(1, "java.lang.Thread.run;sun.nio.ch.FileDispatcherImpl.writev0_[j];JavaThread::check_special_condition_for_native_trans;SafepointSynchronize::block;__futex_abstimed_wait_common;entry_SYSCALL_64_after_hwframe_[k];do_syscall_64_[k];__x64_sys_futex_[k]"),
		// Java leaves: compiled, inlined, interpreted, a hidden class; stripped libc is no nameless frame.
		stack(3, "java.lang.Thread.run;org.apache.jsp.work_jsp._jspService_[j];java.math.BigDecimal.multiply_[i]"),
		stack(2, "java.lang.Thread.run;java.util.TreeMap.put"),
		stack(1, "java.lang.Thread.run;Foo$$Lambda/0x0000000800c0b000.run_[j]"),
		stack(2, "GC Thread#0;[libc.so.6];thread_native_entry;Thread::call_run;G1ParTask::work;__memmove_avx_unaligned_erms.part.0"),
	}}
	f := Analyze(p)
	if f.Samples != 20 || f.RootReach() != 17.0/20 {
		t.Errorf("samples %d, root reach %v", f.Samples, f.RootReach())
	}
	if f.Nameless != 3 || f.NamelessFrames["[native 0x…]"] != 1 || f.NamelessFrames["[bad-return-address]"] != 2 || f.Stripped != 3 {
		t.Errorf("nameless %d %v, stripped %d", f.Nameless, f.NamelessFrames, f.Stripped)
	}
	// writev0 -> writev 4 + 0 (the statx one is wrong), park -> write 2, EPoll.wait -> epoll_ctl 1,
	// writev0 -> statx 2, (vm) writev0 -> futex 1: 10 judged, 5 wrong.
	if f.Syscalls != 10 || f.WrongNative != 5 {
		t.Errorf("%d syscall samples judged, %d wrong: %v", f.Syscalls, f.WrongNative, f.Pairs)
	}
	for pair, n := range map[string]int64{
		"FileDispatcherImpl.writev0 -> writev":          4,
		"WRONG Unsafe.park -> write":                    2,
		"WRONG EPoll.wait -> epoll_ctl":                 1,
		"WRONG FileDispatcherImpl.writev0 -> statx":     2,
		"(signal) SocketDispatcher.read0 -> sigsuspend": 1,
		"(vm) FileDispatcherImpl.writev0 -> futex":      1,
	} {
		if f.Pairs[pair] != n {
			t.Errorf("pair %q: %d, want %d (%v)", pair, f.Pairs[pair], n, f.Pairs)
		}
	}
	for m, n := range map[string]int64{"java.math.BigDecimal.multiply": 3, "java.util.TreeMap.put": 2, "Foo$$Lambda.run": 1} {
		if f.JavaLeaf[m] != n {
			t.Errorf("Java leaf %s: %d, want %d (%v)", m, f.JavaLeaf[m], n, f.JavaLeaf)
		}
	}
	if _, ok := f.JavaLeaf["__memmove_avx_unaligned_erms.part.0"]; ok {
		t.Errorf("a GCC local symbol taken for a Java frame: %v", f.JavaLeaf)
	}
}

func TestIsJavaFrame(t *testing.T) {
	for frame, want := range map[string]bool{
		"java.lang.String.indexOf":            true,
		"java.lang.String.<init>_[j]":         true,
		"org.apache.jsp.work_jsp$Item.total":  true,
		"Foo$$Lambda/0x0000000800c0b000.run":  true,
		"do_writev_[k]":                       false,
		"Compilation::emit_code_body":         false,
		"__memmove_avx_unaligned_erms.part.0": false,
		"finish_task_switch.isra.0":           false,
		"[libc.so.6]":                         false,
		"[bad-return-address]":                false,
		"writev":                              false,
		"StubRoutines (1)":                    false,
		"_dl_runtime_resolve_xsavec":          false,
		"update_curr.cold":                    false,
	} {
		if got := IsJavaFrame(frame); got != want {
			t.Errorf("IsJavaFrame(%q) = %v, want %v", frame, got, want)
		}
	}
}

func TestLibcSyscall(t *testing.T) {
	for fn, want := range map[string]string{
		"writev": "writev", "__write": "write", "__libc_read": "read", "__GI___libc_write": "write",
		"epoll_ctl": "epoll_ctl", "__futex_abstimed_wait_common": "futex", "pthread_cond_signal": "futex",
		"syscall": "", "[libc.so.6]": "", "Parker::park": "", "__open64_nocancel": "openat", "statx": "statx",
	} {
		if got := libcSyscall(fn); got != want {
			t.Errorf("libcSyscall(%q) = %q, want %q", fn, got, want)
		}
	}
}

func TestCompare(t *testing.T) {
	a := map[string]int64{"x": 50, "y": 30, "z": 20}
	b := map[string]int64{"x": 40, "y": 40, "w": 20}
	if got := ShareAgreement(a, b); got < 0.699 || got > 0.701 {
		t.Errorf("ShareAgreement = %v, want 0.7", got)
	}
	if got := ShareAgreement(a, a); got < 0.999 {
		t.Errorf("ShareAgreement(a, a) = %v", got)
	}
	if top := Top(a, 2); strings.Join(top, ",") != "x,y" || Overlap(top, Top(b, 2)) != 2 {
		t.Errorf("Top = %v", top)
	}
	// The truth ranks p, q, r, s, t; the estimate's top 3 has s, tied with the truth's 3rd (r), and t,
	// 20% under it: in with a slack of 25%, out with 10%.
	truth := map[string]int64{"p": 100, "q": 90, "r": 50, "s": 50, "t": 40}
	est := map[string]int64{"p": 95, "s": 60, "t": 55}
	if got := TiedOverlap(est, truth, 3, func(string) float64 { return 0.25 }); got != 3 {
		t.Errorf("TiedOverlap with 25%% slack = %d, want 3", got)
	}
	if got := TiedOverlap(est, truth, 3, func(string) float64 { return 0.1 }); got != 2 {
		t.Errorf("TiedOverlap with 10%% slack = %d, want 2", got)
	}
	if got := NormalizeMethod("java.lang.invoke.LambdaForm$MH+0x0000000800c08400.invoke"); got != "java.lang.invoke.LambdaForm$MH.invoke" {
		t.Errorf("NormalizeMethod = %q", got)
	}
}

func FuzzAnalyze(f *testing.F) {
	f.Add("a.B.c;writev;entry_SYSCALL_64_[k];__x64_sys_writev_[k]", int64(3))
	f.Add("[native 0x1];x.y.z_[j];entry_SYSCALL_64_[k]", int64(1))
	f.Add(";;;", int64(-1))
	f.Fuzz(func(t *testing.T, frames string, count int64) {
		p := &Profile{Samples: 1, Stacks: []ProfileStack{{Frames: strings.Split(frames, ";"), Count: count}}}
		f := Analyze(p)
		if f.WrongNative > f.Syscalls && count >= 0 {
			t.Fatalf("%d wrong of %d judged", f.WrongNative, f.Syscalls)
		}
	})
}
