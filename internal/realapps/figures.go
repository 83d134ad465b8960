package realapps

import (
	"regexp"
	"slices"
	"strings"
)

// ProfileStack is one row of jvmkit.profile/v1: frames root first, as folded output names them.
type ProfileStack struct {
	Frames []string `json:"frames"`
	Count  int64    `json:"count"`
}

// Profile is the data of jvmkit.profile/v1.
type Profile struct {
	Samples int            `json:"samples"`
	Broken  int            `json:"broken"`
	Reasons map[string]int `json:"reasons"`
	Stacks  []ProfileStack `json:"stacks"`
}

// ProfileFigures are what the tier measures of a profile.
type ProfileFigures struct {
	Samples int64
	// Complete is the number of samples walked to their thread's root (samples - broken).
	Complete int64
	// Nameless counts samples with at least one frame that names nothing: a reason frame
	// ("[bad-return-address]"), "[native 0x…]", or a mapping that is no code ("[classes.jsa]",
	// "[modules]"). Frames in stripped libraries ("[libc.so.6]") name their library and are counted in
	// Stripped instead.
	Nameless       int64
	NamelessFrames map[string]int64 // frame (addresses folded to "0x…") -> samples
	Stripped       int64

	// Syscalls counts the samples taken in a system call (their kernel frames start at a syscall entry)
	// under a Java native method that the table of [nativeSyscalls] knows; WrongNative those whose system
	// call is not one that method makes (e.g. Unsafe.park over writev: the Java frames are another call's).
	Syscalls    int64
	WrongNative int64
	// Pairs counts every "Class.method -> syscall" seen, the wrong ones prefixed with "WRONG ", those the
	// table does not know (no native method, or unknown syscall) with "? ", a signal handler's calls with
	// "(signal) " and the JVM's futex calls under a native method with "(vm) ".
	Pairs map[string]int64

	// JavaLeaf counts, per method ("pkg.Class.method"), the samples whose leaf frame is a Java frame: the
	// thread ran Java code, which is what JFR's jdk.ExecutionSample samples.
	JavaLeaf map[string]int64
}

// RootReach is the share of samples walked to their thread's root.
func (f *ProfileFigures) RootReach() float64 { return ratio(f.Complete, f.Samples) }

// NamelessShare is the share of samples with a frame that names nothing.
func (f *ProfileFigures) NamelessShare() float64 { return ratio(f.Nameless, f.Samples) }

// WrongNativeShare is the share of all samples under a native method that does not make their syscall.
func (f *ProfileFigures) WrongNativeShare() float64 { return ratio(f.WrongNative, f.Samples) }

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// Analyze computes the figures of a profile.
func Analyze(p *Profile) ProfileFigures {
	f := ProfileFigures{
		Samples:        int64(p.Samples),
		Complete:       int64(p.Samples - p.Broken),
		NamelessFrames: map[string]int64{},
		Pairs:          map[string]int64{},
		JavaLeaf:       map[string]int64{},
	}
	for _, s := range p.Stacks {
		nameless, stripped := false, false
		for _, fr := range s.Frames {
			switch frameKind(fr) {
			case kindNameless:
				nameless = true
				f.NamelessFrames[foldAddress(fr)] += s.Count
			case kindStripped:
				stripped = true
			}
		}
		if nameless {
			f.Nameless += s.Count
		}
		if stripped {
			f.Stripped += s.Count
		}
		if n := len(s.Frames); n > 0 && IsJavaFrame(s.Frames[n-1]) {
			f.JavaLeaf[MethodOf(s.Frames[n-1])] += s.Count
		}
		if method, call, vm, ok := syscallUnder(s.Frames); ok {
			allowed, known := nativeSyscalls[simpleMethod(method)]
			pair := simpleMethod(method) + " -> " + call
			switch {
			case signalCalls[call]:
				// A signal handler's call (HotSpot's suspend/resume handler, a sampler's): any thread
				// takes signals, whatever it was doing.
				f.Pairs["(signal) "+pair] += s.Count
			case !known || call == "":
				f.Pairs["? "+pair] += s.Count
			case call == "futex" && vm:
				// The JVM's own locks: a native method's thread blocks on a safepoint or a handshake
				// when it returns to Java, in libjvm under the native method's frame.
				f.Syscalls += s.Count
				f.Pairs["(vm) "+pair] += s.Count
			case slices.Contains(allowed, call):
				f.Syscalls += s.Count
				f.Pairs[pair] += s.Count
			default:
				f.Syscalls += s.Count
				f.WrongNative += s.Count
				f.Pairs["WRONG "+pair] += s.Count
			}
		}
	}
	return f
}

type kind int

const (
	kindNamed kind = iota
	kindNameless
	kindStripped
)

var (
	strippedLib = regexp.MustCompile(`^\[[^\]\s]*\.so(\.[0-9.]+)?\]$`)
	hexAddress  = regexp.MustCompile(`0x[0-9a-fA-F]+`)
)

func frameKind(frame string) kind {
	name := stripAnnotation(frame)
	if !strings.HasPrefix(name, "[") || !strings.HasSuffix(name, "]") {
		return kindNamed
	}
	if strippedLib.MatchString(name) {
		return kindStripped
	}
	return kindNameless
}

func foldAddress(frame string) string { return hexAddress.ReplaceAllString(frame, "0x…") }

// stripAnnotation removes folded output's "_[j]" (compiled), "_[i]" (inlined) and "_[k]" (kernel).
func stripAnnotation(frame string) string {
	for _, s := range []string{"_[j]", "_[i]", "_[k]"} {
		if n, ok := strings.CutSuffix(frame, s); ok {
			return n
		}
	}
	return frame
}

// javaName is a Java frame's name: dotted identifiers, the last being the method ("<init>" and
// "<clinit>" included), hidden classes' "/0x…" suffix allowed.
var javaName = regexp.MustCompile(`^[\pL_$][\pL\pN_$]*(\.[\pL_$][\pL\pN_$]*)*(/0x[0-9a-f]+)?(\.[\pL_$][\pL\pN_$]*|\.<init>|\.<clinit>)$`)

// gccSuffixes are the local-symbol suffixes GCC gives native functions ("foo.part.0", "foo.cold"), which
// would otherwise look like Java names.
var gccSuffixes = []string{".cold", ".part", ".isra", ".constprop", ".lto_priv", ".localalias", ".annobin"}

// IsJavaFrame reports whether a folded frame is a Java frame: compiled ("_[j]") and inlined ("_[i]")
// frames are marked; interpreted ones are not and are told from native symbols by their shape
// (pkg.Class.method, no "::", no GCC suffix).
func IsJavaFrame(frame string) bool {
	if strings.HasSuffix(frame, "_[j]") || strings.HasSuffix(frame, "_[i]") {
		return true
	}
	if strings.HasSuffix(frame, "_[k]") || strings.Contains(frame, "::") || !strings.Contains(frame, ".") {
		return false
	}
	for _, s := range gccSuffixes {
		if strings.Contains(frame, s+".") || strings.HasSuffix(frame, s) {
			return false
		}
	}
	return javaName.MatchString(frame)
}

// MethodOf returns a Java frame's method as "pkg.Class.method", a hidden class's address dropped (see
// [NormalizeMethod]).
func MethodOf(frame string) string { return NormalizeMethod(stripAnnotation(frame)) }

// simpleMethod is "Class.method" of "pkg.Class.method": the native-method table's key, the same for the
// classes that moved between JDKs (sun.misc.Unsafe, jdk.internal.misc.Unsafe).
func simpleMethod(method string) string {
	i := strings.LastIndexByte(method, '.')
	if i <= 0 {
		return method
	}
	if j := strings.LastIndexByte(method[:i], '.'); j >= 0 {
		return method[j+1:]
	}
	return method
}

// signalCalls are the system calls signal handlers make.
var signalCalls = map[string]bool{
	"rt_sigsuspend": true, "sigsuspend": true, "rt_sigreturn": true, "rt_sigprocmask": true, "sigprocmask": true,
}

// syscallUnder finds, in a stack that entered the kernel by a system call, the Java method nearest the
// kernel frames and the system call: from the kernel's __x64_sys_<name> frame when the callchain has one,
// else from the C library's wrapper just above the kernel frames ("" when neither says). vm says whether
// a JVM (C++) frame lies between the two. ok is false for stacks without a syscall entry (interrupts,
// page faults) or without a Java frame.
func syscallUnder(frames []string) (method, call string, vm, ok bool) {
	entry := -1
	for i, fr := range frames {
		if strings.HasPrefix(fr, "entry_SYSCALL") && strings.HasSuffix(fr, "_[k]") {
			entry = i
			break
		}
	}
	if entry <= 0 {
		return "", "", false, false
	}
	java := -1
	for i := entry - 1; i >= 0; i-- {
		if IsJavaFrame(frames[i]) {
			java = i
			break
		}
	}
	if java < 0 {
		return "", "", false, false
	}
	for _, fr := range frames[java+1 : entry] {
		if strings.Contains(fr, "::") {
			vm = true
		}
	}
	method = MethodOf(frames[java])
	for _, fr := range frames[entry+1:] {
		if m := kernelSyscall.FindStringSubmatch(fr); m != nil {
			return method, m[1], vm, true
		}
	}
	return method, libcSyscall(frames[entry-1]), vm, true
}

var kernelSyscall = regexp.MustCompile(`^__(?:x64|ia32|se|do)_sys_(\w+)_\[k\]$`)

// libcSyscall names the system call a C library function makes: its own name ("writev", "__write",
// "__libc_read", "epoll_wait") without the library's prefixes and suffixes; the futex calls under the
// pthread and futex helpers; "" when it cannot tell ("syscall", a stripped library, a JVM function).
func libcSyscall(fn string) string {
	if strings.HasPrefix(fn, "[") || strings.Contains(fn, "::") {
		return ""
	}
	if strings.Contains(fn, "futex") || strings.HasPrefix(strings.TrimLeft(fn, "_"), "pthread_cond") ||
		strings.HasPrefix(strings.TrimLeft(fn, "_"), "pthread_mutex") || strings.Contains(fn, "lll_lock") {
		return "futex"
	}
	name := strings.TrimLeft(fn, "_")
	name = strings.TrimPrefix(name, "GI_")
	name = strings.TrimLeft(name, "_")
	name = strings.TrimPrefix(name, "libc_")
	name = strings.TrimSuffix(name, "_nocancel")
	if name == "syscall" || name == "" {
		return ""
	}
	if alias, ok := libcAliases[name]; ok {
		return alias
	}
	return name
}

// libcAliases are C library functions named otherwise than the system call they make on x86-64.
var libcAliases = map[string]string{
	"open64": "openat", "open": "openat", "fstat64": "newfstatat", "stat64": "statx", "lstat64": "statx",
	"fstatat64": "newfstatat", "pread64": "pread64", "pwrite64": "pwrite64", "lseek64": "lseek",
	"clock_nanosleep": "clock_nanosleep", "nanosleep": "clock_nanosleep", "poll": "poll", "accept": "accept",
	"sched_yield": "sched_yield", "epoll_wait": "epoll_wait", "recv": "recvfrom", "send": "sendto",
}

// nativeSyscalls lists, for the Java native methods seen under system calls in the applications' profiles,
// the calls each makes (x86-64 names, as the kernel's __x64_sys_<name> frames and the C library's wrappers
// give them), from the JDK's native sources. Keys are "Class.method" so that one entry covers a class that
// moved (sun.misc -> jdk.internal.misc) or a method JDKs renamed the class of (FileDispatcherImpl,
// UnixFileDispatcherImpl, SocketDispatcher). The kernel implements x86-64's stat, lstat and fstat as
// newstat, newlstat and newfstat: JDK 11 (built against glibc 2.31's __xstat64) makes those calls.
var nativeSyscalls = map[string][]string{
	"Unsafe.park":                          {"futex"},
	"Unsafe.unpark":                        {"futex"},
	"Object.wait":                          {"futex"},
	"Object.wait0":                         {"futex"},
	"Object.notify":                        {"futex"},
	"Object.notifyAll":                     {"futex"},
	"Thread.sleep":                         {"futex", "nanosleep", "clock_nanosleep"},
	"Thread.sleep0":                        {"futex", "nanosleep", "clock_nanosleep"},
	"Thread.sleepNanos0":                   {"futex", "nanosleep", "clock_nanosleep"},
	"Thread.yield":                         {"sched_yield"},
	"Thread.yield0":                        {"sched_yield"},
	"Thread.start0":                        {"clone", "clone3", "mmap", "mprotect", "munmap", "futex", "madvise", "rt_sigprocmask", "sched_getaffinity"},
	"FileDispatcherImpl.writev0":           {"writev"},
	"UnixFileDispatcherImpl.writev0":       {"writev"},
	"SocketDispatcher.writev0":             {"writev"},
	"FileDispatcherImpl.write0":            {"write"},
	"UnixFileDispatcherImpl.write0":        {"write"},
	"SocketDispatcher.write0":              {"write", "sendto"},
	"FileDispatcherImpl.read0":             {"read"},
	"UnixFileDispatcherImpl.read0":         {"read"},
	"SocketDispatcher.read0":               {"read", "recvfrom"},
	"FileDispatcherImpl.readv0":            {"readv"},
	"UnixFileDispatcherImpl.readv0":        {"readv"},
	"SocketDispatcher.readv0":              {"readv"},
	"FileDispatcherImpl.pread0":            {"pread64"},
	"UnixFileDispatcherImpl.pread0":        {"pread64"},
	"FileDispatcherImpl.pwrite0":           {"pwrite64"},
	"UnixFileDispatcherImpl.pwrite0":       {"pwrite64"},
	"FileDispatcherImpl.force0":            {"fsync", "fdatasync"},
	"UnixFileDispatcherImpl.force0":        {"fsync", "fdatasync"},
	"FileDispatcherImpl.size0":             {"fstat", "newfstat", "newfstatat", "statx"},
	"UnixFileDispatcherImpl.size0":         {"fstat", "newfstat", "newfstatat", "statx"},
	"FileDispatcherImpl.seek0":             {"lseek"},
	"UnixFileDispatcherImpl.seek0":         {"lseek"},
	"FileDispatcherImpl.truncate0":         {"ftruncate"},
	"UnixFileDispatcherImpl.truncate0":     {"ftruncate"},
	"FileDispatcherImpl.close0":            {"close"},
	"UnixFileDispatcherImpl.close0":        {"close"},
	"FileDispatcherImpl.preClose0":         {"dup2"},
	"UnixDispatcher.close0":                {"close"},
	"UnixDispatcher.preClose0":             {"dup2"},
	"FileChannelImpl.map0":                 {"mmap"},
	"FileChannelImpl.unmap0":               {"munmap"},
	"UnixFileDispatcherImpl.map0":          {"mmap"},
	"UnixFileDispatcherImpl.unmap0":        {"munmap"},
	"FileChannelImpl.transferTo0":          {"sendfile"},
	"EPoll.wait":                           {"epoll_wait", "epoll_pwait", "epoll_pwait2"},
	"EPoll.ctl":                            {"epoll_ctl"},
	"EPoll.create":                         {"epoll_create", "epoll_create1"},
	"Net.poll":                             {"poll", "ppoll"},
	"Net.accept":                           {"accept", "accept4"},
	"Net.accept0":                          {"accept", "accept4"},
	"ServerSocketChannelImpl.accept0":      {"accept", "accept4"},
	"Net.connect0":                         {"connect"},
	"Net.localInetAddress":                 {"getsockname"},
	"Net.localPort":                        {"getsockname"},
	"Net.remoteInetAddress":                {"getpeername"},
	"Net.setIntOption0":                    {"setsockopt"},
	"Net.getIntOption0":                    {"getsockopt"},
	"Net.socket0":                          {"socket", "setsockopt"},
	"Net.bind0":                            {"bind"},
	"Net.listen":                           {"listen"},
	"Net.shutdown":                         {"shutdown"},
	"IOUtil.drain":                         {"read"},
	"IOUtil.drain1":                        {"read"},
	"IOUtil.write1":                        {"write"},
	"IOUtil.makePipe":                      {"pipe", "pipe2"},
	"UnixNativeDispatcher.stat0":           {"stat", "newstat", "newfstatat", "statx"},
	"UnixNativeDispatcher.stat1":           {"stat", "newstat", "newfstatat", "statx"},
	"UnixNativeDispatcher.stat2":           {"stat", "newstat", "newfstatat", "statx"},
	"UnixNativeDispatcher.lstat0":          {"lstat", "newlstat", "newfstatat", "statx"},
	"UnixNativeDispatcher.fstat0":          {"fstat", "newfstat", "newfstatat", "statx"},
	"UnixNativeDispatcher.fstatat0":        {"newfstatat", "statx"},
	"UnixNativeDispatcher.open0":           {"open", "openat"},
	"UnixNativeDispatcher.openat0":         {"openat"},
	"UnixNativeDispatcher.close0":          {"close"},
	"UnixNativeDispatcher.access0":         {"access", "faccessat", "faccessat2"},
	"UnixNativeDispatcher.readlink0":       {"readlink", "readlinkat"},
	"UnixNativeDispatcher.realpath0":       {"readlink", "readlinkat", "newfstatat", "statx", "getcwd", "lstat", "newlstat"},
	"UnixNativeDispatcher.opendir0":        {"open", "openat", "newfstatat", "fstat", "newfstat"},
	"UnixNativeDispatcher.fdopendir":       {"newfstatat", "fstat", "newfstat", "fcntl"},
	"UnixNativeDispatcher.readdir0":        {"getdents64"},
	"UnixNativeDispatcher.readdir":         {"getdents64"},
	"UnixNativeDispatcher.closedir":        {"close"},
	"UnixNativeDispatcher.unlink0":         {"unlink", "unlinkat"},
	"UnixNativeDispatcher.mkdir0":          {"mkdir", "mkdirat"},
	"UnixNativeDispatcher.rename0":         {"rename", "renameat", "renameat2"},
	"FileOutputStream.writeBytes":          {"write"},
	"FileInputStream.readBytes":            {"read"},
	"FileInputStream.available0":           {"ioctl", "fstat", "newfstat", "newfstatat", "lseek"},
	"RandomAccessFile.readBytes":           {"read"},
	"RandomAccessFile.writeBytes":          {"write"},
	"RandomAccessFile.seek0":               {"lseek"},
	"RandomAccessFile.length":              {"fstat", "newfstat", "newfstatat", "lseek"},
	"RandomAccessFile.length0":             {"fstat", "newfstat", "newfstatat", "lseek"},
	"UnixFileSystem.getBooleanAttributes0": {"stat", "newstat", "newfstatat", "statx"},
	"UnixFileSystem.getLastModifiedTime":   {"stat", "newstat", "newfstatat", "statx"},
	"UnixFileSystem.getLength":             {"stat", "newstat", "newfstatat", "statx"},
	"UnixFileSystem.canonicalize0":         {"readlink", "newfstatat", "statx", "lstat", "newlstat", "getcwd"},
	"System.currentTimeMillis":             {"clock_gettime", "gettimeofday"},
	"System.nanoTime":                      {"clock_gettime"},
}
