package jcmd

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/jvmkit/jvmkit/attach"
	"github.com/jvmkit/jvmkit/internal/hsperf"
)

// Client runs diagnostic commands on one JVM. It is safe for concurrent use.
type Client struct {
	VM *attach.VM

	mu       sync.Mutex
	feature  int                 // JDK feature release, 0 until known
	commands []string            // `help`, cached
	help     map[string]*Command // `help <name>`, cached
}

// Dial attaches to the JVM with the given pid (see attach.Dial).
func Dial(ctx context.Context, pid int, opts *attach.Options) (*Client, error) {
	vm, err := attach.Dial(ctx, pid, opts)
	if err != nil {
		return nil, err
	}
	return &Client{VM: vm, help: map[string]*Command{}}, nil
}

// Close releases the client's handles; the JVM is not affected.
func (c *Client) Close() error { return c.VM.Close() }

// Target is the attached process.
func (c *Client) Target() *attach.Target { return c.VM.Target }

// Run executes a diagnostic command line as it is, without validation, and returns its output. A
// command the JVM rejects returns *attach.JVMError. Several commands may be separated by newlines.
func (c *Client) Run(ctx context.Context, line string) (string, error) {
	return c.VM.Jcmd(ctx, line)
}

// RunChecked validates line against the JVM's own description of the command (`help <name>`, cached
// per client) and runs it only if it is valid: a mistyped option is reported with a suggestion
// before anything reaches the JVM.
func (c *Client) RunChecked(ctx context.Context, line string) (string, error) {
	if err := c.Check(ctx, line); err != nil {
		return "", err
	}
	return c.Run(ctx, line)
}

// ErrUnknownCommand is wrapped by Check for a command the JVM does not have.
var ErrUnknownCommand = errors.New("unknown diagnostic command")

// Check validates a command line (name and options) against the JVM's help.
func (c *Client) Check(ctx context.Context, line string) error {
	words, err := SplitLine(line)
	if err != nil {
		return err
	}
	if len(words) == 0 {
		return nil
	}
	cmd, err := c.Describe(ctx, words[0])
	if err != nil {
		return err
	}
	return cmd.Check(words[1:])
}

// Commands lists the diagnostic commands the JVM offers (`help`). Hidden commands such as
// VM.start_java_debugging are not listed but can be described and run.
func (c *Client) Commands(ctx context.Context) ([]string, error) {
	c.mu.Lock()
	cached := c.commands
	c.mu.Unlock()
	if cached != nil {
		return cached, nil
	}
	out, err := c.Run(ctx, "help")
	if err != nil {
		return nil, err
	}
	names, err := ParseHelpList(out)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.commands = names
	c.mu.Unlock()
	return names, nil
}

// Describe returns the JVM's description of one command (`help <name>`).
func (c *Client) Describe(ctx context.Context, name string) (*Command, error) {
	c.mu.Lock()
	cmd := c.help[name]
	c.mu.Unlock()
	if cmd != nil {
		return cmd, nil
	}
	out, err := c.Run(ctx, "help "+name)
	if err != nil {
		return nil, err
	}
	if strings.Contains(out, "No such command") || strings.Contains(out, "Help unavailable") {
		return nil, c.unknownCommand(ctx, name)
	}
	cmd, err = ParseHelp(out)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.help[name] = cmd
	c.mu.Unlock()
	return cmd, nil
}

func (c *Client) unknownCommand(ctx context.Context, name string) error {
	names, err := c.Commands(ctx)
	if err == nil {
		if s := Suggest(name, names); s != "" {
			return fmt.Errorf("%w %q; did you mean %q?", ErrUnknownCommand, name, s)
		}
	}
	return fmt.Errorf("%w %q (see help)", ErrUnknownCommand, name)
}

// Feature returns the JVM's JDK feature release (17, 21, 25, ...): from its hsperfdata when it has
// one (no attach operation), else from VM.version.
func (c *Client) Feature(ctx context.Context) (int, error) {
	c.mu.Lock()
	f := c.feature
	c.mu.Unlock()
	if f != 0 {
		return f, nil
	}
	t := c.Target()
	if tmp, err := t.OpenTmp(); err == nil {
		if path, err := hsperf.Find(tmp.Path(), t.NSPID, t.UID); err == nil {
			if d, _ := hsperf.ReadFile(ctx, path); d != nil {
				if v, ok := d.String("java.property.java.vm.specification.version"); ok {
					f = specFeature(v)
				}
			}
		}
		tmp.Close()
	}
	if f == 0 {
		out, err := c.Run(ctx, "VM.version")
		if err != nil {
			return 0, err
		}
		if digits, ok := matchJDKLine(out); ok {
			f, _ = strconv.Atoi(digits)
		}
	}
	if f == 0 {
		return 0, fmt.Errorf("jcmd: cannot tell the JDK version of JVM %d", t.PID)
	}
	c.mu.Lock()
	c.feature = f
	c.mu.Unlock()
	return f, nil
}

// specFeature turns java.vm.specification.version ("1.8", "17") into a feature number.
func specFeature(v string) int {
	v = strings.TrimPrefix(v, "1.")
	n, _ := strconv.Atoi(v)
	return n
}
