package jitlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

func monotonicNow() uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return uint64(ts.Nano())
}

// JitdumpFile is a jitdump file that this process has mapped executable, so that perf finds it: perf
// record logs executable mappings, and perf inject --jit reads a file named jit-<pid>.dump that process
// <pid> mapped. The records may name any process: perf inject attaches each CODE_LOAD to the pid it
// carries. A helper process (a recorder outside the JVM) so publishes the JVM's code with no agent in
// the JVM; perf must record the helper too (perf record -p JVM,HELPER or -a), and run -k mono.
type JitdumpFile struct {
	*JitdumpWriter
	f    *os.File
	mark []byte
	path string
}

// CreateJitdump creates dir/jit-<our pid>.dump (O_EXCL, never through a symbolic link), writes the
// header and maps the file's first page PROT_READ|PROT_EXEC. dir must not be on a noexec mount; perf's
// own agent uses $HOME/.debug/jit/... . perf inject writes its jitted-*.so files next to the dump, so
// keep dir until then. opts.PID defaults to our pid.
func CreateJitdump(dir string, opts JitdumpOptions) (*JitdumpFile, error) {
	if opts.PID == 0 {
		opts.PID = os.Getpid()
	}
	path := filepath.Join(dir, "jit-"+strconv.Itoa(os.Getpid())+".dump")
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("jitdump: create %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	jf := &JitdumpFile{f: f, path: path}
	if jf.JitdumpWriter, err = NewJitdump(f, opts); err == nil {
		// perf's agent maps one page, PROT_EXEC so that perf record logs it.
		jf.mark, err = unix.Mmap(fd, 0, os.Getpagesize(), unix.PROT_READ|unix.PROT_EXEC, unix.MAP_PRIVATE)
		if err != nil {
			err = fmt.Errorf("jitdump: map %s executable (a noexec mount?): %w", path, err)
		}
	}
	if err != nil {
		return nil, errors.Join(err, f.Close(), os.Remove(path))
	}
	return jf, nil
}

// Path returns the file's name.
func (f *JitdumpFile) Path() string { return f.path }

// Close flushes, unmaps and closes the file. The file stays: perf inject reads it after the recording.
func (f *JitdumpFile) Close() error {
	err := f.Flush()
	if f.mark != nil {
		if uerr := unix.Munmap(f.mark); uerr != nil && err == nil {
			err = fmt.Errorf("jitdump: unmap: %w", uerr)
		}
		f.mark = nil
	}
	if cerr := f.f.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("jitdump: close: %w", cerr)
	}
	return err
}

// ReadCode reads size bytes of process pid's memory at addr (process_vm_readv; needs the rights of
// ptrace: the same user and ptrace_scope, or CAP_SYS_PTRACE), for CodeLoad.Code.
func ReadCode(pid int, addr, size uint64) ([]byte, error) {
	if size > maxJitCode {
		return nil, fmt.Errorf("read code: size %d too large", size)
	}
	buf := make([]byte, size)
	for done := uint64(0); done < size; {
		local := []unix.Iovec{{Base: &buf[done]}}
		local[0].SetLen(int(size - done))
		remote := []unix.RemoteIovec{{Base: uintptr(addr + done), Len: int(size - done)}}
		n, err := unix.ProcessVMReadv(pid, local, remote, 0)
		if err != nil {
			return nil, fmt.Errorf("read code of %d at %#x: %w", pid, addr+done, err)
		}
		if n == 0 {
			return nil, fmt.Errorf("read code of %d at %#x: nothing read", pid, addr+done)
		}
		done += uint64(n)
	}
	return buf, nil
}
