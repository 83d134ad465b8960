package jcmd

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// JVM is a Java process found on the machine.
type JVM struct {
	PID   int `json:"pid"`   // pid in the caller's namespace (host pid)
	NSPID int `json:"nspid"` // pid inside the JVM's own pid namespace
	UID   int `json:"uid"`
	// MainClass is the main class, jar or module as jcmd shows it; Command adds the program arguments
	// (hsperfdata sun.rt.javaCommand, or the command line when the JVM has no hsperfdata).
	MainClass string `json:"main_class"`
	Command   string `json:"command"`
	// HotSpot is false for OpenJ9, which has another attach mechanism.
	HotSpot bool `json:"hotspot"`
	// Attachable is false when the JVM reports -XX:+DisableAttachMechanism; true when it does not or
	// cannot tell (no hsperfdata).
	Attachable bool `json:"attachable"`
	// PerfData names its hsperfdata file, below /proc/<pid>/root/tmp, empty when it has none
	// (-XX:-UsePerfData) or it is not readable. It is for display: the file was found in the JVM's /tmp
	// as the JVM resolves it (attach.Target.OpenTmp), which that path, opened as it is, may not reach.
	PerfData string `json:"perfdata,omitempty"`
	// Container is true when the JVM lives in another pid or mount namespace than the caller.
	Container bool `json:"container"`
}

// optionsWithValue reports the java launcher options whose value is the next word. A switch, not a map:
// gjcmd links this package, and a package-level map is built at every start.
func optionsWithValue(a string) bool {
	switch a {
	case "-cp", "-classpath", "--class-path", "-p", "--module-path",
		"--upgrade-module-path", "--add-modules", "--enable-native-access",
		"--limit-modules", "--add-reads", "--add-exports", "--add-opens",
		"--patch-module", "--source", "-d", "--describe-module":
		return true
	}
	return false
}

// CommandFromArgs reconstructs what the JVM reports as sun.rt.javaCommand from a java command line:
// the main class, the jar (-jar) or the module/main class (-m), followed by the program arguments.
func CommandFromArgs(args []string) string {
	_, cmd := splitArgs(args)
	return cmd
}

// JVMOptions returns the options of a java command line, those before the main class, jar or
// module: what the launcher and the JVM read (-D properties, -XX flags), not the program's arguments.
func JVMOptions(args []string) []string {
	opts, _ := splitArgs(args)
	return opts
}

// splitArgs cuts a java command line (program name first) into the launcher's options and the
// command: main class, jar or module with the program arguments.
func splitArgs(args []string) (opts []string, cmd string) {
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-jar" || a == "-m" || a == "--module":
			if i+1 < len(args) {
				return args[1:i], strings.Join(args[i+1:], " ")
			}
			return args[1:i], ""
		case strings.HasPrefix(a, "--module="):
			return args[1:i], strings.Join(append([]string{strings.TrimPrefix(a, "--module=")}, args[i+1:]...), " ")
		case optionsWithValue(a):
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return args[1:i], strings.Join(args[i:], " ")
		}
	}
	if len(args) > 0 {
		return args[1:], filepath.Base(args[0])
	}
	return nil, ""
}

// ErrNoMatch is returned by Select when nothing matches.
var ErrNoMatch = errors.New("no matching JVM")

// Select resolves jcmd's target argument against the JVMs on the machine: a pid (used as-is, even if
// List does not show it), "0" for every attachable HotSpot JVM, or a substring of the main class.
func Select(ctx context.Context, target string) ([]int, error) {
	if n, err := strconv.Atoi(target); err == nil && n != 0 {
		return []int{n}, nil
	}
	jvms, err := List(ctx)
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, j := range jvms {
		if !j.HotSpot || !j.Attachable {
			continue
		}
		if target == "0" || strings.Contains(j.MainClass, target) {
			pids = append(pids, j.PID)
		}
	}
	if len(pids) == 0 {
		return nil, fmt.Errorf("%w: could not find any processes matching: '%s'", ErrNoMatch, target)
	}
	return pids, nil
}
