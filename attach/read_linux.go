package attach

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// readStatus reads up to the end of the status line and returns the bytes read beyond it.
func (vm *VM) readStatus(ctx context.Context, c *conn) (status int, rest []byte, err error) {
	var buf [512]byte
	var got []byte
	for {
		m, rerr := vm.read(ctx, c, buf[:])
		got = append(got, buf[:m]...)
		done := rerr != nil
		st, k, perr := ParseStatusLine(got, done)
		switch {
		case perr != nil:
			if errors.Is(perr, ErrNoReply) && done && !isEOF(rerr) {
				return 0, nil, rerr
			}
			return 0, nil, perr
		case k > 0:
			return st, got[k:], nil
		case done:
			return 0, nil, rerr
		}
	}
}

// read is a Read that keeps an eye on the JVM while it waits: a JVM that exits ends the wait at once,
// and every watchInterval it checks that the process is not stopped and not frozen (cgroup freezer), so a
// dead, stopped or frozen JVM gives an error instead of a hang, while a long command in a healthy JVM (a
// heap dump) may take as long as it needs within ctx.
func (vm *VM) read(ctx context.Context, c *conn, p []byte) (int, error) {
	var start time.Time
	pidfd := vm.pidfd // the wait ends when the JVM exits
	exited := false
	for {
		n, err := c.readNow(p)
		if cerr := ctx.Err(); cerr != nil { // checked after the read: an EOF may be abort's shutdown
			return 0, vm.ioErr(ctx, "read reply", cerr)
		}
		if n > 0 || err != nil && !errors.Is(err, unix.EAGAIN) {
			return n, err
		}
		if exited { // and nothing left to read: its socket closes as its threads go, before the pidfd tells
			if err := vm.watch(); err != nil {
				return 0, err
			}
			pidfd = -1 // cannot be; but a pidfd that stays readable must not make this spin
		}
		if time.Since(start) >= watchInterval { // and at the first wait, start being zero
			if !start.IsZero() {
				if err := vm.watch(); err != nil {
					return 0, err
				}
			}
			start = time.Now()
		}
		exited, err = c.wait(ctx, unix.POLLIN, pidfd, watchInterval-time.Since(start))
		if err != nil {
			return 0, err
		}
	}
}

// watch checks, while a read waits, that the JVM is there, not stopped and not frozen.
func (vm *VM) watch() error {
	if gerr := vm.goneErr("while it was running the command"); gerr != nil {
		return gerr
	}
	st, err := vm.Target.current()
	if err != nil {
		return err
	}
	if st.Stopped() {
		return vm.stoppedErr(st)
	}
	return vm.frozenErr()
}

func (vm *VM) ioErr(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("%w: no reply from JVM %d before the deadline (%s); its attach listener may be busy with another client or the JVM is hung", ErrNoListener, vm.Target.PID, what)
		}
		return ctx.Err()
	}
	return fmt.Errorf("attach: %s: %w", what, err)
}

func isEOF(err error) bool { return errors.Is(err, io.EOF) || isReset(err) }

// isReset: Linux reports ECONNRESET instead of EOF to a reader whose peer closed a unix socket with
// unread data in its own queue, which is how a JVM that rejects a request looks; it ends the reply.
func isReset(err error) bool { return errors.Is(err, unix.ECONNRESET) }

// drain copies the rest of the reply to w. A reader goroutine empties the socket into memory as fast
// as it can, independently of w: a JVM that streams output (JDK 25) writes to the socket from inside
// a safepoint, and a stalled reader would stall the whole JVM.
//
// Most replies are whole in the socket by the time their status line is read: what is there already is
// taken without the goroutine (starting one wakes a thread on an idle CPU, 0.2 ms of a warm gjcmd), and a
// reply that ends there is written out without it.
func (vm *VM) drain(ctx context.Context, c *conn, rest []byte, w io.Writer) error {
	var sp spool
	sp.cond = sync.NewCond(&sp.mu)
	if len(rest) > 0 {
		sp.chunks = append(sp.chunks, append([]byte(nil), rest...))
	}
	var small [512]byte // a short reply's rest: a 64 KiB buffer is fresh memory to page in (kept on the stack: fill never gets it)
	buf := small[:]
	ended := false
	for !ended && ctx.Err() == nil { // cancelled: the reader's path says what became of the command
		n, err := c.readNow(buf)
		switch {
		case ctx.Err() != nil: // an EOF may be abort's shutdown: the reader's path says what happened
		case n > 0:
			sp.chunks = append(sp.chunks, append([]byte(nil), buf[:n]...))
			if n == len(small) && len(buf) == len(small) {
				buf = make([]byte, 64<<10)
			}
			continue
		case isEOF(err):
			ended = true
			sp.close(nil)
			continue
		}
		break // EAGAIN: more to come, which the reader goroutine waits for; an error: it reports it
	}
	if !ended {
		go vm.fill(ctx, c, &sp, make([]byte, 64<<10))
	}
	var werr error
	for {
		chunk, ok := sp.get()
		if !ok {
			break
		}
		if werr == nil {
			_, werr = w.Write(chunk)
		}
	}
	if sp.err != nil {
		return sp.err
	}
	return werr
}

// fill reads the rest of the reply into sp as fast as the socket gives it, into buf first, and closes
// sp at its end.
func (vm *VM) fill(ctx context.Context, c *conn, sp *spool, buf []byte) {
	var err error
	for {
		var n int
		n, err = vm.read(ctx, c, buf)
		if n > 0 {
			sp.put(buf[:n])
			buf = make([]byte, 64<<10)
		}
		if err != nil {
			break
		}
	}
	if isEOF(err) {
		err = nil
	}
	sp.close(err)
}

// spool is an unbounded FIFO of byte chunks between the socket reader and the output writer.
type spool struct {
	mu     sync.Mutex
	cond   *sync.Cond
	chunks [][]byte
	done   bool
	err    error
}

func (s *spool) put(b []byte) {
	s.mu.Lock()
	s.chunks = append(s.chunks, b)
	s.mu.Unlock()
	s.cond.Signal()
}

func (s *spool) close(err error) {
	s.mu.Lock()
	s.done, s.err = true, err
	s.mu.Unlock()
	s.cond.Signal()
}

func (s *spool) get() ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.chunks) == 0 && !s.done {
		s.cond.Wait()
	}
	if len(s.chunks) == 0 {
		return nil, false
	}
	b := s.chunks[0]
	s.chunks[0] = nil
	s.chunks = s.chunks[1:]
	return b, true
}
