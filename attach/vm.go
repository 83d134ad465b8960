package attach

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"
)

// DefaultAttachTimeout bounds attaching when neither the context nor Options give a deadline; it is
// the JDK's own default (sun.tools.attach.attachTimeout).
const DefaultAttachTimeout = 10 * time.Second

// VM is an attached HotSpot JVM. Each operation opens its own connection (one operation per
// connection is the protocol); a VM is safe for concurrent use.
type VM struct {
	Target *Target

	opts    Options
	pidfd   int
	inotify int       // kept open until Close, see startListener
	tmp     *Dir      // Dial's /tmp, for the first connection and tidy (under mu)
	dialed  time.Time // when Dial opened tmp

	listenerMu sync.Mutex // one restart of the listener at a time (connect, on a stale socket)

	mu      sync.Mutex
	proto   int  // negotiated protocol, ProtocolAuto until known
	asOwner bool // connect with the target's effective ids (JDK 8 refuses root)
	noHint  bool // negotiate without the release file's hint (tests of the negotiation)
}

// Options tune Dial. The zero value is what most callers want.
type Options struct {
	// AttachTimeout bounds starting the listener and connecting, when the context has no earlier
	// deadline. Zero means DefaultAttachTimeout.
	AttachTimeout time.Duration
	// Protocol forces a protocol version (ProtocolV1, ProtocolV2); ProtocolAuto tries 2 and falls back.
	Protocol int
	// Streaming asks JDK 25+ JVMs to write output to the socket while the command runs. The default
	// (false) lets the JVM buffer the output: nothing it does at a safepoint then waits for us.
	Streaming bool
	// Logger receives debug diagnostics (trigger location, protocol, timings). Nil: none.
	Logger Logger
	// BeforeStart, when set, is called each time before attach starts the JVM's listener (creates the
	// trigger file and signals the JVM), so that a caller can be ready to have it removed: gjcmd installs
	// its SIGINT handler there when it had no reason to before.
	BeforeStart func()
}

// Logger is what attach logs to: a *slog.Logger is one. It is an interface, not *slog.Logger, so that
// gjcmd links no log/slog (its package inits are part of every start).
type Logger interface {
	Debug(msg string, args ...any)
}

// Reply is the answer of the JVM to one operation.
type Reply struct {
	Status int    // 0 = success; see JVMError
	Output []byte // everything after the status line
}

// Execute runs one attach operation (e.g. "jcmd", "properties", "load") and returns the JVM's whole
// reply. A non-zero status is returned as *JVMError together with the reply.
func (vm *VM) Execute(ctx context.Context, op string, args ...string) (*Reply, error) {
	var buf bytes.Buffer
	err := vm.ExecuteTo(ctx, &buf, op, args...)
	var je *JVMError
	if errors.As(err, &je) {
		return &Reply{Status: je.Code, Output: []byte(je.Message)}, err
	}
	if err != nil {
		return nil, err
	}
	return &Reply{Output: buf.Bytes()}, nil
}

// Jcmd runs a diagnostic command line (e.g. "VM.version", "GC.heap_dump -all /tmp/x.hprof"); several
// commands may be separated by newlines. It returns the command output; a command the JVM rejects
// gives *JVMError.
func (vm *VM) Jcmd(ctx context.Context, line string) (string, error) {
	var buf bytes.Buffer
	err := vm.ExecuteTo(ctx, &buf, "jcmd", line)
	return buf.String(), err
}

// Load loads a JVMTI agent library (`load` operation). absolute says whether lib is a path (in the
// target's file system) or a library name; options are passed to Agent_OnAttach. For Java agents use
// lib "instrument" and options "<jar>[=<args>]". The reply shapes of JDK 8, 9-20 and 21+ are mapped to
// one result: nil, or *AgentError.
func (vm *VM) Load(ctx context.Context, lib string, absolute bool, options string) error {
	r, err := vm.Execute(ctx, "load", lib, strconv.FormatBool(absolute), options)
	if r == nil {
		return err
	}
	return LoadResult(r.Status, r.Output)
}

// errBadVersion is returned by a probing roundTrip when the JVM does not speak protocol 2.
var errBadVersion = errors.New("protocol version not supported by the JVM")

// ExecuteTo runs one operation and copies its output to w as it arrives. The socket is always drained
// at full speed, whatever the pace of w, so a slow consumer never holds up the JVM; when w fails the
// rest of the output is read and discarded and w's error returned. A non-zero status is returned as
// *JVMError carrying the output (up to 1 MiB), and nothing is written to w.
func (vm *VM) ExecuteTo(ctx context.Context, w io.Writer, op string, args ...string) error {
	proto := vm.protocol()
	if proto == ProtocolAuto {
		// JDKs before 24 answer protocol 2 with an error: where the JVM's release file says it is one
		// of them, protocol 1 at once saves that round trip. A JDK 24+ speaks both; a wrong hint from a
		// file its user rewrote costs the default streaming mode (see Options.Streaming) at worst.
		if f := vm.releaseFeature(); f > 0 && f < 24 {
			vm.logf("JVM %d is JDK %d by its release file; using protocol 1", vm.Target.PID, f)
			vm.setProtocol(ProtocolV1)
			proto = ProtocolV1
		}
	}
	if proto != ProtocolV1 {
		var opts []string
		if vm.opts.Streaming {
			opts = []string{"streaming=1"}
		} else {
			opts = []string{"streaming=0"}
		}
		req, err := EncodeV2(op, opts, args...)
		if err != nil {
			return err
		}
		err = vm.roundTrip(ctx, req, w, true) // a 101 is errBadVersion: retried, or said plainly below
		if !errors.Is(err, errBadVersion) {
			if err == nil && proto == ProtocolAuto {
				vm.setProtocol(ProtocolV2)
			}
			return err
		}
		if proto == ProtocolV2 {
			return &JVMError{Code: StatusBadVersion, Message: "the JVM does not speak attach protocol 2 (it needs JDK 24 or later)"}
		}
		vm.logf("JVM %d answered %d to protocol 2; using protocol 1", vm.Target.PID, StatusBadVersion)
		vm.setProtocol(ProtocolV1)
	}
	req, err := EncodeV1(op, args...)
	if err != nil {
		return err
	}
	return vm.roundTrip(ctx, req, w, false)
}

func (vm *VM) releaseFeature() int {
	vm.mu.Lock()
	noHint := vm.noHint
	vm.mu.Unlock()
	if noHint {
		return 0
	}
	return vm.Target.releaseFeature()
}

func (vm *VM) protocol() int {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	if vm.opts.Protocol != ProtocolAuto {
		return vm.opts.Protocol
	}
	return vm.proto
}

func (vm *VM) setProtocol(p int) {
	vm.mu.Lock()
	vm.proto = p
	vm.mu.Unlock()
}

func (vm *VM) logf(format string, args ...any) {
	if vm.opts.Logger != nil {
		vm.opts.Logger.Debug(fmt.Sprintf(format, args...), "pid", vm.Target.PID)
	}
}

// Protocol returns the protocol version in use with this JVM: ProtocolAuto until the first operation
// has negotiated it.
func (vm *VM) Protocol() int { return vm.protocol() }
