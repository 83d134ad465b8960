package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Sink is where windows go: an OTLP endpoint, Pyroscope, a directory. Export is called with the
// windows of one window period (one per JVM), from one goroutine per sink; an error makes the agent
// keep the batch and try again later, unless it wraps ErrRejected.
type Sink interface {
	// Name identifies the sink in metrics and logs ("otlp", "pyroscope", "dir").
	Name() string
	Export(ctx context.Context, windows []*Window) error
}

// ErrRejected marks an export the backend refused for good (a malformed or unauthorised request):
// retrying it cannot succeed, so the batch is dropped and counted.
var ErrRejected = errors.New("rejected by the backend")

// batch is one window period's windows, queued for one sink.
type batch struct {
	windows []*Window
	bytes   int
}

// queue buffers batches for one sink, bounded by bytes: when full the oldest batches are dropped
// (a backend that comes back gets the latest windows first-in-line after what it missed). It sends in
// order, retrying with exponential backoff.
type queue struct {
	sink     Sink
	maxBytes int
	timeout  time.Duration
	backoff  [2]time.Duration // first, max
	log      *slog.Logger
	stats    *sinkStats

	mu    sync.Mutex
	items []batch
	bytes int
	wake  chan struct{}
}

func newQueue(s Sink, maxBytes int, timeout time.Duration, backoff [2]time.Duration, log *slog.Logger, st *sinkStats) *queue {
	return &queue{sink: s, maxBytes: maxBytes, timeout: timeout, backoff: backoff, log: log, stats: st, wake: make(chan struct{}, 1)}
}

// push queues a batch, dropping the oldest ones while the buffer is over its bound (the newest batch
// is kept even alone over it).
func (q *queue) push(ws []*Window) {
	b := batch{windows: ws}
	for _, w := range ws {
		b.bytes += len(w.Pprof)
	}
	q.mu.Lock()
	q.items = append(q.items, b)
	q.bytes += b.bytes
	for q.bytes > q.maxBytes && len(q.items) > 1 {
		old := q.items[0]
		q.items[0] = batch{}
		q.items = q.items[1:]
		q.bytes -= old.bytes
		q.stats.dropped.Add(int64(len(old.windows)))
		q.log.Warn("agent: buffer full: dropped the oldest windows", "sink", q.sink.Name(), "windows", len(old.windows), "buffer_bytes", q.maxBytes)
	}
	q.stats.buffered.Store(int64(q.bytes))
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *queue) head() (batch, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) == 0 {
		return batch{}, false
	}
	return q.items[0], true
}

// pop removes the head if it is still b (push may have dropped it meanwhile).
func (q *queue) pop(b batch) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) > 0 && len(q.items[0].windows) > 0 && len(b.windows) > 0 && q.items[0].windows[0] == b.windows[0] {
		q.items[0] = batch{}
		q.items = q.items[1:]
		q.bytes -= b.bytes
		q.stats.buffered.Store(int64(q.bytes))
	}
}

// run sends until stop is closed; then drain sends what is left. An export in flight when stop
// closes is finished, not cancelled (bounded by the export timeout): cancelling it could leave the
// backend with a batch that drain would then send again.
func (q *queue) run(stop <-chan struct{}) {
	delay := time.Duration(0)
	for {
		b, ok := q.head()
		if !ok {
			select {
			case <-stop:
				return
			case <-q.wake:
				continue
			}
		}
		if delay > 0 {
			t := time.NewTimer(delay)
			select {
			case <-stop:
				t.Stop()
				return
			case <-t.C:
			}
		}
		select {
		case <-stop:
			return
		default:
		}
		if err := q.send(context.Background(), b); err != nil {
			delay = min(max(2*delay, q.backoff[0]), q.backoff[1])
			q.log.Warn("agent: export failed; will retry", "sink", q.sink.Name(), "windows", len(b.windows), "retry_in", delay, "err", err)
			continue
		}
		delay = 0
	}
}

// send exports b once; on success or rejection it leaves the queue.
func (q *queue) send(ctx context.Context, b batch) error {
	sctx, cancel := context.WithTimeout(ctx, q.timeout)
	defer cancel()
	start := time.Now()
	err := q.sink.Export(sctx, b.windows)
	q.stats.exportSeconds.add(time.Since(start))
	switch {
	case err == nil:
		q.stats.sent.Add(int64(len(b.windows)))
		q.stats.batches.Add(1)
		q.pop(b)
		return nil
	case errors.Is(err, ErrRejected):
		q.stats.errors.Add(1)
		q.stats.rejected.Add(int64(len(b.windows)))
		q.log.Error("agent: backend rejected windows; dropped", "sink", q.sink.Name(), "windows", len(b.windows), "err", err)
		q.pop(b)
		return nil
	}
	q.stats.errors.Add(1)
	return fmt.Errorf("%s: %w", q.sink.Name(), err)
}

// drain tries once more to send every queued batch before ctx's deadline (the agent is stopping);
// what it cannot send is counted as dropped.
func (q *queue) drain(ctx context.Context) {
	for {
		b, ok := q.head()
		if !ok {
			return
		}
		if err := q.send(ctx, b); err != nil || ctx.Err() != nil {
			q.mu.Lock()
			n := 0
			for _, it := range q.items {
				n += len(it.windows)
			}
			q.items, q.bytes = nil, 0
			q.stats.buffered.Store(0)
			q.mu.Unlock()
			q.stats.dropped.Add(int64(n))
			q.log.Error("agent: stopping: could not send the last windows", "sink", q.sink.Name(), "windows", n, "err", err)
			return
		}
	}
}
