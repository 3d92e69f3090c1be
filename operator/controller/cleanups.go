package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	backupv1 "github.com/loopwatch/loopwatch/operator/api/v1alpha1"
)

const (
	// cleanupAttempt bounds one clean-up attempt, so a store that hangs is
	// reported (and retried) before the deadline.
	cleanupAttempt = 5 * time.Second
	// cleanupRetry is the pause after a failed clean-up attempt.
	cleanupRetry = 2 * time.Second
	// maxParallelCleanups bounds the store calls the clean-ups of one
	// controller make at once.
	maxParallelCleanups = 32
)

// errCleanupUnfinished is the outcome of a clean-up that had not succeeded,
// nor failed, by its deadline: still running, or never started because the
// finalizer first ran after the deadline.
var errCleanupUnfinished = errors.New("store clean-up not finished by the deadline")

// cleanups runs the external clean-ups of finalizers (deleting archives from
// a store) in the background, so a reconcile never waits on the store. A
// reconcile that waited for each clean-up's timeout would, with the store
// down, serve deletions in batches of MaxConcurrentReconciles: 20 deletions
// with 4 workers and a 10 s timeout take 50 s. Here each clean-up gets until
// its deadline; the finalizer goes when the clean-up succeeded or the
// deadline passed, and the orphan collector deletes what is left.
type cleanups struct {
	clock clock.PassiveClock
	// wake carries the object of every finished attempt to the controller.
	wake     chan event.GenericEvent
	parallel chan struct{}

	mu   sync.Mutex
	jobs map[string]*cleanup
}

type cleanup struct {
	running bool
	// succeeded is set when an attempt succeeded.
	succeeded bool
	// err is the last failed attempt's error.
	err error
	// ended is when the last attempt ended.
	ended  time.Time
	cancel context.CancelFunc
}

// cleanupStep is what a finalizer does next.
type cleanupStep struct {
	// done: remove the finalizer. With err set, the clean-up did not succeed
	// by the deadline and is left to the orphan collector.
	done bool
	// err is the last attempt's failure, also while not done.
	err error
	// wait is when to look again while not done; a finished attempt also
	// wakes the controller through source.
	wait time.Duration
}

func newCleanups(c clock.PassiveClock) *cleanups {
	return &cleanups{
		clock:    c,
		wake:     make(chan event.GenericEvent, 1024),
		parallel: make(chan struct{}, maxParallelCleanups),
		jobs:     map[string]*cleanup{},
	}
}

// source requeues the object of every finished attempt.
func (c *cleanups) source() source.Source {
	return source.Channel(c.wake, &handler.EnqueueRequestForObject{})
}

// step advances the clean-up of obj (key names it): it starts an attempt,
// bounded by cleanupAttempt and the deadline, when none is running and the
// last one failed more than cleanupRetry ago, and says whether the finalizer
// can go. It never waits for the store.
func (c *cleanups) step(ctx context.Context, key string, obj client.Object, deadline time.Time, run func(context.Context) error) cleanupStep {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	j := c.jobs[key]
	switch {
	case j != nil && j.succeeded:
		delete(c.jobs, key)
		return cleanupStep{done: true}
	case !now.Before(deadline):
		err := errCleanupUnfinished
		if j != nil {
			if !j.running && j.err != nil {
				err = j.err
			}
			j.cancel()
			delete(c.jobs, key)
		}
		return cleanupStep{done: true, err: err}
	case j != nil && j.running:
		return cleanupStep{err: j.err, wait: deadline.Sub(now)}
	case j != nil && now.Before(j.ended.Add(cleanupRetry)):
		return cleanupStep{err: j.err, wait: min(j.ended.Add(cleanupRetry).Sub(now), deadline.Sub(now))}
	}
	if j == nil {
		j = &cleanup{}
		c.jobs[key] = j
	}
	// The attempt outlives this reconcile, but not its deadline.
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(cleanupAttempt, deadline.Sub(now)))
	j.running, j.cancel = true, cancel
	go c.attempt(actx, j, obj, run)
	return cleanupStep{err: j.err, wait: deadline.Sub(now)}
}

func (c *cleanups) attempt(ctx context.Context, j *cleanup, obj client.Object, run func(context.Context) error) {
	var err error
	select {
	case c.parallel <- struct{}{}:
		err = run(ctx)
		<-c.parallel
	case <-ctx.Done():
		err = ctx.Err()
	}
	c.mu.Lock()
	j.running, j.succeeded, j.err, j.ended = false, err == nil, err, c.clock.Now()
	j.cancel()
	c.mu.Unlock()
	select {
	case c.wake <- event.GenericEvent{Object: obj}:
	default:
		// The requeue at the deadline or after the retry pause still comes.
	}
}

// forget cancels and drops the clean-up of an object that is gone.
func (c *cleanups) forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if j := c.jobs[key]; j != nil {
		j.cancel()
		delete(c.jobs, key)
	}
}

// pendingCleanupCondition is the Ready condition of an object whose finalizer
// waits for the store: what failed, and when the finalizer goes anyway.
func pendingCleanupCondition(store string, attemptErr error, deadline time.Time, generation int64, now time.Time) metav1.Condition {
	return metav1.Condition{
		Type: backupv1.ConditionReady, Status: metav1.ConditionFalse, Reason: backupv1.ReasonCleanupPending,
		Message: fmt.Sprintf("Being deleted: store %q has not deleted the archives yet (%v); the finalizer goes at %s at the latest and the orphan collector deletes what is left",
			store, attemptErr, deadline.UTC().Format(time.RFC3339)),
		ObservedGeneration: generation, LastTransitionTime: metav1.NewTime(now),
	}
}
