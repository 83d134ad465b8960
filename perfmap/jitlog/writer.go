package jitlog

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// WriterOptions tune how a Writer batches records.
type WriterOptions struct {
	// BatchSize is the size in bytes at which Append writes the pending batch out; 0 means 64 KiB.
	BatchSize int
	// FlushInterval bounds how long a record stays in memory: a timer writes the batch out this long
	// after its first record was appended. 0 means records are written only when the batch is full and
	// by Flush and Close.
	FlushInterval time.Duration
}

// Writer appends records to a log. Records are encoded into a batch in memory that is written with a
// single write: a writer killed at any moment loses the records of its pending batch and no others. A
// kill during that write (Linux stops a write to a file between pages when a fatal signal is pending)
// or a full disk may leave part of the batch, ending in a partial record, which the Reader reports as
// damage at the end and skips.
//
// A Writer is safe for concurrent use. An error from a write is kept: every later call returns it.
type Writer struct {
	mu    sync.Mutex
	w     io.Writer
	f     *os.File // for Sync and Close, when the Writer made the file
	batch []byte
	size  int
	every time.Duration
	timer *time.Timer
	err   error
	done  bool
}

// NewWriter starts a log on w: it writes the header at once, then records as Append batches them.
func NewWriter(w io.Writer, opts WriterOptions) (*Writer, error) {
	lw := &Writer{w: w, size: opts.BatchSize, every: opts.FlushInterval}
	if lw.size <= 0 {
		lw.size = 64 << 10
	}
	lw.batch = make([]byte, 0, min(lw.size, 1<<20)+maxRecord)
	if _, err := w.Write(appendHeader(nil)); err != nil {
		return nil, fmt.Errorf("jitlog: write header: %w", err)
	}
	return lw, nil
}

// Create creates the log file path and starts a log in it. The file must not exist: it is created with
// O_CREAT|O_EXCL, which never follows a symbolic link (not even a dangling one), so a link planted at
// path cannot redirect the log. It is opened O_APPEND, readable by everyone (0644 before the umask).
func Create(path string, opts WriterOptions) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("jitlog: create log: %w", err)
	}
	w, err := NewWriter(f, opts)
	if err != nil {
		return nil, errors.Join(err, f.Close(), os.Remove(path))
	}
	w.f = f
	return w, nil
}

// Stat describes the log file, as created (for a caller that may remove it later and must not remove
// something else put at its name since); an error for a Writer without a file of its own.
func (w *Writer) Stat() (os.FileInfo, error) {
	if w.f == nil {
		return nil, errors.New("jitlog: the writer has no file of its own")
	}
	return w.f.Stat()
}

// Append adds records to the pending batch and writes the batch out when it is full. A name longer
// than MaxName bytes or a source longer than MaxSource is cut. Append fails for a kind other than
// Snapshot, Load and Unload and for a pid outside [0, 2^31), before adding any of recs.
func (w *Writer) Append(recs ...Record) error {
	for i := range recs {
		if !recs[i].Kind.valid() {
			return fmt.Errorf("jitlog: append: record kind %d is not SNAPSHOT, LOAD or UNLOAD", uint8(recs[i].Kind))
		}
		if recs[i].PID < 0 || recs[i].PID > maxPID {
			return fmt.Errorf("jitlog: append: pid %d out of range", recs[i].PID)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	for i := range recs {
		w.batch = appendRecord(w.batch, &recs[i])
		if len(w.batch) >= w.size {
			if err := w.flushLocked(); err != nil {
				return err
			}
		}
	}
	if len(w.batch) > 0 && w.every > 0 && w.timer == nil {
		w.timer = time.AfterFunc(w.every, w.flushTimer)
	}
	return nil
}

func (w *Writer) usable() error {
	if w.err != nil {
		return w.err
	}
	if w.done {
		return errors.New("jitlog: writer is closed")
	}
	return nil
}

func (w *Writer) flushTimer() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.timer = nil
	if w.err == nil && !w.done {
		_ = w.flushLocked() // kept in w.err for the next call
	}
}

// Flush writes the pending batch out (to the kernel: it survives the death of the process, not of the
// machine; see Sync).
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	return w.flushLocked()
}

func (w *Writer) flushLocked() error {
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	if len(w.batch) == 0 {
		return nil
	}
	n, err := w.w.Write(w.batch)
	if err == nil && n < len(w.batch) {
		err = io.ErrShortWrite
	}
	w.batch = w.batch[:0]
	if err != nil {
		w.err = fmt.Errorf("jitlog: write: %w", err)
		return w.err
	}
	return nil
}

// Sync flushes and, for a file made by Create, commits it to stable storage (fsync).
func (w *Writer) Sync() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	if err := w.flushLocked(); err != nil {
		return err
	}
	if w.f != nil {
		if err := w.f.Sync(); err != nil {
			w.err = fmt.Errorf("jitlog: sync: %w", err)
			return w.err
		}
	}
	return nil
}

// Close flushes and, for a file made by Create, closes it. The io.Writer given to NewWriter is not
// closed.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return w.err
	}
	var err error
	if w.err == nil {
		err = w.flushLocked()
	}
	w.done = true
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	if w.f != nil {
		if cerr := w.f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("jitlog: close: %w", cerr)
		}
	}
	if err == nil {
		err = w.err
	}
	return err
}
