package exporter

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"
)

// Receiving a body comes before taking a processing slot, under a byte budget, a deadline and a
// minimum transfer rate: a sender that dribbles its body holds only the bytes it has sent and a
// goroutine, never a slot a real batch needs, and is cut off once it falls behind the rate.

// pooledBodyBytes is the capacity of the body buffers kept for reuse: a 400-event batch of
// Metadata-level events (~330 KiB) fits, so the common request neither allocates nor grows.
const pooledBodyBytes = 512 << 10

// receiver reads request bodies under Server's limits.
type receiver struct {
	maxBody  int64
	budget   *semaphore.Weighted
	wait     time.Duration
	minRate  int64
	grace    time.Duration
	timeout  time.Duration
	pool     sync.Pool
	mu       sync.Mutex
	active   map[*http.ResponseController]struct{}
	stopping bool
}

func newReceiver(cfg ServerConfig) *receiver {
	r := &receiver{
		maxBody: cfg.MaxBodyBytes, budget: semaphore.NewWeighted(cfg.MaxBufferedBytes), wait: cfg.QueueWait,
		minRate: cfg.MinBodyBytesPerSecond, grace: cfg.BodyGrace, timeout: cfg.BodyTimeout,
		active: map[*http.ResponseController]struct{}{},
	}
	r.pool.New = func() any { b := make([]byte, 0, pooledBodyBytes); return &b }
	return r
}

// body is a received request body and the budget it holds until released.
type body struct {
	data     []byte
	buf      *[]byte
	reserved int64
	r        *receiver
}

// release gives the buffer and its budget back.
func (b *body) release() {
	if b.buf != nil && cap(b.data) <= pooledBodyBytes {
		*b.buf = b.data[:0]
		b.r.pool.Put(b.buf)
	}
	b.r.budget.Release(b.reserved)
	b.data, b.buf, b.reserved = nil, nil, 0
}

// receiveError is why a body was not received: the status to answer and the reason to count.
type receiveError struct {
	status int
	reason string
	err    error
}

func (e *receiveError) Error() string { return e.reason + ": " + e.err.Error() }

// receive reads the request's body. It reserves budget for the buffer before using it, starting
// with a pooled buffer and growing only as bytes actually arrive (to the declared length when
// there is one), so a sender that declares a large body but sends little holds little. Before
// each read the deadline is set to what the minimum rate allows for the bytes received so far
// (grace + received/minRate), within the overall timeout.
func (rv *receiver) receive(w http.ResponseWriter, req *http.Request) (*body, *receiveError) {
	if req.ContentLength > rv.maxBody {
		return nil, &receiveError{http.StatusRequestEntityTooLarge, ReasonTooLarge, errors.New("declared body length over the limit")}
	}
	rc := http.NewResponseController(w)
	if !rv.track(rc) {
		return nil, &receiveError{http.StatusServiceUnavailable, ReasonShuttingDown, errors.New("shutting down")}
	}
	defer rv.untrack(rc)
	b := &body{r: rv}
	if err := rv.acquire(req.Context(), pooledBodyBytes); err != nil {
		return nil, &receiveError{http.StatusTooManyRequests, ReasonOverloaded, errors.New("no room to receive another body")}
	}
	b.reserved = pooledBodyBytes
	b.buf = rv.pool.Get().(*[]byte)
	b.data = (*b.buf)[:0]
	start := time.Now()
	end := start.Add(rv.timeout)
	src := http.MaxBytesReader(w, req.Body, rv.maxBody)
	for {
		if len(b.data) == cap(b.data) {
			if err := rv.grow(req.Context(), b, req.ContentLength); err != nil {
				b.release()
				return nil, err
			}
		}
		deadline := start.Add(rv.grace + time.Duration(float64(len(b.data))/float64(rv.minRate)*float64(time.Second)))
		if deadline.After(end) {
			deadline = end
		}
		_ = rc.SetReadDeadline(deadline)
		n, err := src.Read(b.data[len(b.data):cap(b.data)])
		b.data = b.data[:len(b.data)+n]
		if err == io.EOF {
			_ = rc.SetReadDeadline(time.Time{})
			return b, nil
		}
		if err != nil {
			b.release()
			return nil, rv.readError(err)
		}
	}
}

// grow makes room for more of the body: twice the buffer, or at once the declared length,
// within the limit, after reserving the difference in the budget.
func (rv *receiver) grow(ctx context.Context, b *body, declared int64) *receiveError {
	size := max(2*int64(cap(b.data)), declared)
	size = min(size, rv.maxBody+1) // +1: MaxBytesReader needs room to see the body is too long
	if size <= int64(cap(b.data)) {
		size = int64(cap(b.data)) + 1
	}
	more := size - b.reserved
	if more > 0 {
		if err := rv.acquire(ctx, more); err != nil {
			return &receiveError{http.StatusTooManyRequests, ReasonOverloaded, errors.New("no room to receive the rest of the body")}
		}
		b.reserved += more
	}
	grown := make([]byte, len(b.data), size)
	copy(grown, b.data)
	b.data = grown
	return nil
}

// acquire reserves n bytes of the budget, waiting for them at most the queue wait: each
// reservation waits on its own, so a body that takes longer than the queue wait to arrive (at the
// minimum rate, a large one does) can still grow.
func (rv *receiver) acquire(ctx context.Context, n int64) error {
	ctx, cancel := context.WithTimeout(ctx, rv.wait)
	defer cancel()
	return rv.budget.Acquire(ctx, n)
}

func (rv *receiver) readError(err error) *receiveError {
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return &receiveError{http.StatusRequestEntityTooLarge, ReasonTooLarge, err}
	case errors.Is(err, os.ErrDeadlineExceeded):
		rv.mu.Lock()
		stopping := rv.stopping
		rv.mu.Unlock()
		if stopping {
			return &receiveError{http.StatusServiceUnavailable, ReasonShuttingDown, err}
		}
		return &receiveError{http.StatusRequestTimeout, ReasonSlowBody, err}
	}
	return &receiveError{http.StatusBadRequest, ReasonMalformed, err}
}

// track registers a body being received, so that shutdown can interrupt it; false once shutdown
// has begun.
func (rv *receiver) track(rc *http.ResponseController) bool {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	if rv.stopping {
		return false
	}
	rv.active[rc] = struct{}{}
	return true
}

func (rv *receiver) untrack(rc *http.ResponseController) {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	delete(rv.active, rc)
}

// stop refuses further bodies and interrupts the ones being received: an upload that would take
// longer than the shutdown grace period is answered 503 now (the API server resends it to the
// next exporter) instead of holding the shutdown past its deadline.
func (rv *receiver) stop() {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	rv.stopping = true
	for rc := range rv.active {
		_ = rc.SetReadDeadline(time.Now())
	}
}
