package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	backupv1 "github.com/loopwatch/loopwatch/operator/api/v1alpha1"
)

// store calls as the clean-ups see them.
var (
	succeed = func(context.Context) error { return nil }
	hang    = func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	refuse  = func(context.Context) error { return errors.New("connection refused") }
)

func TestCleanupSteps(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	deadline := start.Add(10 * time.Second)
	type look struct {
		// after is how long after start the finalizer looks.
		after time.Duration
		want  cleanupStep
		// attempts is how many store calls were started by then.
		attempts int32
	}
	cases := []struct {
		name  string
		run   func(context.Context) error
		hangs bool
		looks []look
	}{
		{name: "lets the finalizer go once the store call succeeded", run: succeed, looks: []look{
			{after: 0, want: cleanupStep{wait: 10 * time.Second}, attempts: 1},
			{after: time.Second, want: cleanupStep{done: true}, attempts: 1},
		}},
		{name: "keeps waiting on a hanging store call, then gives up at the deadline", run: hang, hangs: true, looks: []look{
			{after: 0, want: cleanupStep{wait: 10 * time.Second}, attempts: 1},
			{after: 4 * time.Second, want: cleanupStep{wait: 6 * time.Second}, attempts: 1},
			{after: 10 * time.Second, want: cleanupStep{done: true, err: errCleanupUnfinished}, attempts: 1},
		}},
		{name: "retries a failed store call after a pause, and reports its error at the deadline", run: refuse, looks: []look{
			{after: 0, want: cleanupStep{wait: 10 * time.Second}, attempts: 1},
			{after: time.Second, want: cleanupStep{wait: cleanupRetry - time.Second, err: errors.New("connection refused")}, attempts: 1},
			{after: 3 * time.Second, want: cleanupStep{wait: 7 * time.Second, err: errors.New("connection refused")}, attempts: 2},
			{after: 11 * time.Second, want: cleanupStep{done: true, err: errors.New("connection refused")}, attempts: 2},
		}},
		{name: "lets the finalizer go at once when first seen after the deadline", run: succeed, looks: []look{
			{after: 15 * time.Second, want: cleanupStep{done: true, err: errCleanupUnfinished}, attempts: 0},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(start)
			cl := newCleanups(clk)
			var attempts atomic.Int32
			run := func(ctx context.Context) error { attempts.Add(1); return c.run(ctx) }
			obj := &backupv1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b"}}
			for _, l := range c.looks {
				clk.SetTime(start.Add(l.after))
				before := attempts.Load()
				got := cl.step(context.Background(), "ns/b", obj, deadline, run)
				if got.done != l.want.done || got.wait != l.want.wait || fmt.Sprint(got.err) != fmt.Sprint(l.want.err) {
					t.Fatalf("after %s: step = %+v, want %+v", l.after, got, l.want)
				}
				// Calls start in the background: give them a moment.
				for wait := time.Now().Add(time.Second); attempts.Load() < l.attempts && time.Now().Before(wait); {
					time.Sleep(time.Millisecond)
				}
				if n := attempts.Load(); n != l.attempts {
					t.Fatalf("after %s: %d store calls, want %d", l.after, n, l.attempts)
				}
				// Let a call that does not hang end before the next look.
				if attempts.Load() > before && !c.hangs {
					<-cl.wake
				}
			}
		})
	}
}

// The point of the clean-ups: with the store down, a finalizer's look returns
// at once however many deletions are in flight.
func TestCleanupStepsNeverWaitOnTheStore(t *testing.T) {
	cl := newCleanups(clocktesting.NewFakeClock(time.Now()))
	deadline := time.Now().Add(time.Hour)
	start := time.Now()
	for i := range 500 {
		obj := &backupv1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint(i)}}
		if s := cl.step(context.Background(), "ns/"+obj.Name, obj, deadline, hang); s.done {
			t.Fatalf("clean-up %d done while the store hangs", i)
		}
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("500 looks at hanging clean-ups took %s", took)
	}
	for i := range 500 {
		cl.forget(fmt.Sprintf("ns/%d", i))
	}
	if len(cl.jobs) != 0 {
		t.Errorf("%d clean-ups left after forgetting them all", len(cl.jobs))
	}
}

func TestPendingCleanupConditionSaysWhatAndUntilWhen(t *testing.T) {
	deadline := time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)
	c := pendingCleanupCondition("default", errors.New("delete archives of ns/b: context deadline exceeded"), deadline, 4, deadline.Add(-5*time.Second))
	if c.Type != backupv1.ConditionReady || c.Status != metav1.ConditionFalse || c.Reason != backupv1.ReasonCleanupPending || c.ObservedGeneration != 4 {
		t.Errorf("condition = %+v, want Ready=False/CleanupPending for generation 4", c)
	}
	for _, want := range []string{`store "default"`, "context deadline exceeded", "2026-01-01T00:00:10Z", "orphan collector"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("message %q does not say %q", c.Message, want)
		}
	}
}
