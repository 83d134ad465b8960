package guard

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// guardianEnv marks the process as a guardian: the binary that started it, executed again
// (/proc/self/exe) with this variable set. The check runs in this package's init, before main or a test
// binary's TestMain, so that every binary that can start a guardian can also be one.
const guardianEnv = "JVMKIT_GUARDIAN"

func init() {
	if os.Getenv(guardianEnv) == "1" {
		os.Exit(guardianMain())
	}
}

// readyWait bounds the guardian's start (exec, reading the JVM's VMStructs): nothing is changed before
// it is ready.
const readyWait = 30 * time.Second

// spec is what a command tells its guardian, as one JSON line on fd 3.
type spec struct {
	Dir     string  `json:"dir"`
	JVM     Process `json:"jvm"`
	Command Process `json:"command"`
}

// guardian is the command's handle on its guardian process.
type guardian struct {
	cmd    *exec.Cmd
	ctl    *os.File // write end of the guardian's fd 3: "done", "wait", or closed by the command's death
	exited chan struct{}
}

// startGuardian starts a guardian for cmd's changes to jvm and waits until it watches both and can undo
// what the record says.
func startGuardian(dir string, jvm, self Process) (*guardian, error) {
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("guard: start guardian: %w", err)
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		ctlW.Close()
		return nil, fmt.Errorf("guard: start guardian: %w", err)
	}
	c := exec.Command("/proc/self/exe")
	c.Args = []string{"jvmkit-guardian", strconv.Itoa(jvm.PID)} // what ps shows
	c.Env = append(os.Environ(), guardianEnv+"=1")
	c.ExtraFiles = []*os.File{ctlR, readyW}
	// A session (and so a process group) of its own: a terminal's SIGINT/SIGHUP and a kill of the
	// command's process group do not reach it.
	c.SysProcAttr = &unix.SysProcAttr{Setsid: true}
	err = c.Start()
	ctlR.Close()
	readyW.Close()
	if err != nil {
		ctlW.Close()
		readyR.Close()
		return nil, fmt.Errorf("guard: start guardian: %w", err)
	}
	g := &guardian{cmd: c, ctl: ctlW, exited: make(chan struct{})}
	go func() {
		_ = c.Wait()
		close(g.exited)
	}()
	b, _ := json.Marshal(spec{Dir: dir, JVM: jvm, Command: self})
	if _, err := ctlW.Write(append(b, '\n')); err != nil {
		g.kill()
		readyR.Close()
		return nil, fmt.Errorf("guard: start guardian: %w", err)
	}
	_ = readyR.SetReadDeadline(time.Now().Add(readyWait))
	line, err := bufio.NewReader(readyR).ReadString('\n')
	readyR.Close()
	if line != "ok\n" {
		g.kill()
		msg := strings.TrimSpace(strings.TrimPrefix(line, "error: "))
		if msg == "" && err != nil {
			msg = err.Error()
		}
		return nil, fmt.Errorf("guard: the guardian did not start: %s", msg)
	}
	return g, nil
}

func (g *guardian) pid() int { return g.cmd.Process.Pid }

func (g *guardian) kill() {
	_ = g.cmd.Process.Kill()
	g.ctl.Close()
	<-g.exited
}

// done tells the guardian that the command has undone everything it holds, and waits for it to exit.
func (g *guardian) done() {
	_, _ = g.ctl.Write([]byte("done\n"))
	g.ctl.Close()
	select {
	case <-g.exited:
	case <-time.After(5 * time.Second): // it exits by itself; init reaps it once we are gone
	}
}

// release lets the guardian be: it waits for the command's death and undoes what the command still holds.
func (g *guardian) release() {
	_, _ = g.ctl.Write([]byte("wait\n"))
	g.ctl.Close()
}

// guardianMain is the guardian process: it watches the command (through a pidfd and the control pipe) and
// the JVM (a pidfd). When the command ends it undoes the changes the record says nobody else holds, unless
// the command said it did so itself; when the JVM exits it removes the JVM's record. It ignores the
// signals that end a command from a terminal or a supervisor: the command receives them too and restores
// its changes itself, and the guardian must outlive it in case it does not.
func guardianMain() int {
	signal.Ignore(unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGPIPE, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU)
	ctl := os.NewFile(3, "ctl")
	ready := os.NewFile(4, "ready")
	fail := func(err error) int {
		fmt.Fprintf(ready, "error: %v\n", err)
		ready.Close()
		return 1
	}
	rd := bufio.NewReader(ctl)
	line, err := rd.ReadString('\n')
	if err != nil {
		return fail(fmt.Errorf("read spec: %w", err))
	}
	var sp spec
	if err := json.Unmarshal([]byte(line), &sp); err != nil || sp.JVM.PID <= 0 || sp.Command.PID <= 0 {
		return fail(fmt.Errorf("bad spec %q", line))
	}
	store, err := OpenStore(sp.Dir)
	if err != nil {
		return fail(err)
	}
	ctx := context.Background()
	u := &undoer{jvm: sp.JVM}
	defer u.close()

	// The command's pidfd names the command only while it is still our parent: a parent cannot be
	// reaped and its pid reused while we are its child.
	cmdfd, err := unix.PidfdOpen(sp.Command.PID, 0)
	if err != nil || os.Getppid() != sp.Command.PID {
		ready.Close()
		cleanup(ctx, store, sp, u) // the command is gone already
		return 0
	}
	jvmfd, err := unix.PidfdOpen(sp.JVM.PID, 0)
	if err != nil || !Alive(sp.JVM) {
		ready.Close()
		forget(ctx, store, sp.JVM)
		return 0
	}
	if err := u.open(ctx); err != nil {
		return fail(err)
	}
	fmt.Fprintln(ready, "ok")
	ready.Close()

	// The control pipe says "done" (the command undid everything itself: exit), "wait" (it is ending
	// with changes it could not undo: act on its pidfd), or reaches EOF without a word: the command died.
	// Its descriptors are closed in order as it dies, the pipe (opened before the command's eBPF objects)
	// before the uprobes, whose removal can take a second or more: EOF comes first, so act on it at once
	// rather than on the pidfd, which is readable only once the command is a zombie.
	msgs := make(chan string, 1)
	go func() {
		s, err := rd.ReadString('\n')
		if err != nil {
			s = ""
		}
		msgs <- s
	}()
	cmdGone, jvmGone := pidfdDone(cmdfd), pidfdDone(jvmfd)
	for {
		select {
		case m := <-msgs:
			switch m {
			case "done\n":
				return 0
			case "wait\n":
				msgs = nil // the pidfd says when it is gone
				continue
			}
			cleanup(ctx, store, sp, u)
			return 0
		case <-jvmGone:
			forget(ctx, store, sp.JVM)
			return 0
		case <-cmdGone:
			if msgs != nil {
				select {
				case m := <-msgs:
					if m == "done\n" {
						return 0
					}
				case <-time.After(100 * time.Millisecond): // EOF arrives with the exit
				}
			}
			cleanup(ctx, store, sp, u)
			return 0
		}
	}
}

// pidfdDone returns a channel closed when the process behind pidfd has exited (or cannot be watched:
// the safe side).
func pidfdDone(fd int) <-chan struct{} {
	c := make(chan struct{})
	go func() {
		defer close(c)
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			n, err := unix.Poll(fds, -1)
			if n > 0 || err != nil && !errors.Is(err, unix.EINTR) {
				return
			}
		}
	}()
	return c
}

// cleanup undoes what the dead command sp.Command held and nobody else holds.
func cleanup(ctx context.Context, store *Store, sp spec, u *undoer) {
	by := fmt.Sprintf("guardian of pid %d", sp.Command.PID)
	_ = store.Update(ctx, sp.JVM, func(r *Record) error {
		for i := range r.Changes {
			r.Changes[i].dropHolder(sp.Command)
		}
		undoUnheld(ctx, r, u, by, fmt.Sprintf("pid %d ended without undoing it", sp.Command.PID))
		return nil
	})
}

// forget removes the record of a JVM that exited.
func forget(ctx context.Context, store *Store, jvm Process) {
	_ = store.Update(ctx, jvm, func(r *Record) error {
		r.Changes, r.Log = nil, nil
		return nil
	})
}

// undoUnheld undoes every change of r that no live command holds; those it cannot undo stay, with an
// entry saying why. It returns the changes undone.
func undoUnheld(ctx context.Context, r *Record, u *undoer, by, why string) []Change {
	var done []Change
	kept := r.Changes[:0]
	for _, c := range r.Changes {
		c.dropDead()
		if len(c.Holders) > 0 {
			kept = append(kept, c)
			continue
		}
		note, err := u.undo(ctx, &c)
		e := Entry{At: time.Now().UTC(), What: "restored", Kind: c.Kind, Name: c.Name, Old: c.New, New: c.Old, By: by,
			Note: strings.Join(nonEmpty(why, note), "; ")}
		if err != nil {
			e.What, e.Note = "left", fmt.Sprintf("could not undo it: %v", err)
			kept = append(kept, c)
		} else {
			done = append(done, c)
		}
		r.log(e)
	}
	r.Changes = kept
	return done
}

func nonEmpty(s ...string) []string {
	var out []string
	for _, x := range s {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}
