package jcmd

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jvmkit/jvmkit/attach"
	"github.com/jvmkit/jvmkit/internal/rootfs"
)

// Files that diagnostic commands write (JFR.dump filename=, GC.heap_dump, Compiler.perfmap,
// Thread.dump_to_file) are named by the JVM in its own world: its mount namespace and root, its working
// directory, its pid namespace (%p). The functions here find such a file from the caller's world and bring
// it out without ever resolving a name the JVM controls against the caller's root.

var (
	// ErrUnreachable: the JVM's working directory has no path from the JVM's root (deleted, hidden under
	// a later mount, or outside a chroot), so a relative file name cannot be turned into a path.
	ErrUnreachable = errors.New("not reachable by a path from the JVM's root")
	// ErrSymlink: a destination is a symbolic link, which CopyOut never writes through. It wraps
	// ErrNotRegular.
	ErrSymlink error = &rootfs.Symlink
	// ErrNotRegular: the file is not a regular file (a FIFO, device, socket or directory).
	ErrNotRegular error = &rootfs.NotRegular
)

// fileNameExpansion reports which sequences a JVM of the given feature release (17, 25, ...) expands in the
// file name argument of a diagnostic command, as expandPath's expandP and expandT arguments:
//
//   - JFR.start, JFR.dump, JFR.stop: %p, %t and %% from JDK 18, expanded by JFR's own argument parser
//     (JDK-8261441, openjdk/jdk#4550 of June 2021, after the JDK 17 fork; JDK 17.0.15 writes "x_%p.jfr"
//     literally, JDK 25 expands; 18 to 24 were not run).
//   - every other FILE-typed argument (GC.heap_dump, Compiler.perfmap, Thread.dump_to_file,
//     System.dump_map, ...): %p and %% from JDK 24 (JDK-8334492); %t stays literal.
func fileNameExpansion(feature int, command string) (expandP, expandT bool) {
	if strings.HasPrefix(command, "JFR.") {
		return feature >= 18, feature >= 18
	}
	return feature >= 24, false
}

// expandPath returns the absolute path, as the JVM sees it, of a file name given to a diagnostic command:
// "%p" becomes nspid where expandP is set, "%t" the time now in JFR's format 2006_01_02_15_04_05 where
// expandT is set, "%%" becomes "%" where either is set; any other "%" stays as it is (HotSpot's
// Arguments::copy_expand_pid and JFR's ArgumentParser agree on all of this). With neither set the name is
// used verbatim, "%%" included, as JDK 17 does. A relative result is joined to jvmCwd (see JVMCwd).
//
// now must be in the JVM's time zone: JFR formats LocalDateTime.now(), the JVM's default zone (TZ,
// -Duser.timezone, or /etc/localtime inside the JVM's root). The JVM takes its own clock reading, so a
// name with %t can only be guessed to the second; JFR.dump and Thread.dump_to_file print the path they
// wrote, which is better when there is output to read.
//
// ".." is not cleaned away: HotSpot passes the name to open(2), so the kernel resolves ".." after any
// symbolic link before it; OpenInJVM does the same inside the JVM's root. (JFR normalizes the path
// lexically first; the two differ only for a symlinked directory followed by "..".)
func expandPath(name string, nspid int, jvmCwd string, now time.Time, expandP, expandT bool) string {
	name = expandName(name, nspid, expandP, expandT, now)
	if strings.HasPrefix(name, "/") {
		return name
	}
	return strings.TrimSuffix(jvmCwd, "/") + "/" + name
}

// expandName expands the name's sequences as expandPath does; at is the time for %t (only the first
// value counts).
func expandName(name string, nspid int, expandP, expandT bool, at ...time.Time) string {
	if !expandP && !expandT || strings.IndexByte(name, '%') < 0 {
		return name
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c != '%' || i+1 == len(name) {
			b.WriteByte(c)
			continue
		}
		switch name[i+1] {
		case '%':
			b.WriteByte('%')
			i++
		case 'p':
			if !expandP {
				b.WriteByte(c)
				continue
			}
			b.WriteString(strconv.Itoa(nspid))
			i++
		case 't':
			if !expandT || len(at) == 0 {
				b.WriteByte(c)
				continue
			}
			b.WriteString(jfrTime(at[0]))
			i++
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// jfrTime formats t as jdk.jfr.internal.util.ValueFormatter.formatDateTime does (JDK 25; Utils in older
// releases): year, month, day, hour, minute and second, two digits each but the year, joined by "_".
func jfrTime(t time.Time) string {
	return fmt.Sprintf("%d%02d_%02d_%02d_%02d_%02d_%02d",
		t.Year()/100, t.Year()%100, int(t.Month()), t.Day(), t.Hour(), t.Minute(), t.Second())
}

// HostPath is a path under /proc/<pid>/root at which a person on the host can find the file at path (as
// the JVM sees it), for messages. Programs must use OpenInJVM: the kernel resolves an absolute symbolic
// link met under /proc/<pid>/root against the reader's root, not the JVM's.
func HostPath(t *attach.Target, path string) string {
	// Cleaned as a path from the JVM's root first, so that ".." cannot climb out of /proc/<pid>/root.
	return t.Root + filepath.Clean("/"+path)
}
