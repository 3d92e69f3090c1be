package demo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/loopwatch/loopwatch/gen"
)

// Result is what one scene showed.
type Result struct {
	Incident Incident
	// Fired maps each expected alert that fired to its time to detect: from the injection to
	// the first time the suite saw it firing.
	Fired map[string]time.Duration
	// Others are the other loopwatch alerts seen pending or firing during the scene, once each
	// (name and state).
	Others []string
	// Took is the scene's wall time, start to close.
	Took time.Duration
	// Diagnosed is what `loopwatch diagnose` concluded at the end of the scene; nil when the
	// incident expects no diagnosis or the scene did not run to its end.
	Diagnosed *Diagnosed
	// Err is why the scene could not run to its end.
	Err error
}

// Caught reports whether the incident was caught: it passed and at least one of its expected
// alerts fired (an incident whose only alert is a known miss is not caught).
func (r Result) Caught() bool { return r.Passed() && len(r.Fired) > 0 }

// Passed reports whether the scene showed what it must: every expected alert fired but those
// known not to fire yet, no other alert was seen, and diagnose named the expected cause first.
func (r Result) Passed() bool {
	if r.Err != nil || len(r.Others) > 0 {
		return false
	}
	if r.Incident.Diagnosis != nil && (r.Diagnosed == nil || !r.Diagnosed.Right) {
		return false
	}
	for _, a := range r.Incident.Expect {
		if _, fired := r.Fired[a.FullName()]; !fired && r.Incident.Known[a] == "" {
			return false
		}
	}
	return true
}

// tail is how long a scene is still watched for other alerts once the expected ones fired.
const tail = 5 * time.Second

// RunIncident runs inc in a scene of its own and watches the scene's Prometheus, through its
// alerts API, from its start until every expected alert fired (or its `for` + 1 minute after the
// injection passed) and a few seconds more: the expected alerts must fire, no other loopwatch
// alert may be pending or firing. With keep, the scene is returned running (close it); else it is
// closed.
func (c *Cluster) RunIncident(ctx context.Context, inc Incident, keep bool) (res Result, scene *Scene) {
	res = Result{Incident: inc, Fired: map[string]time.Duration{}}
	start := time.Now()
	s, err := c.NewScene(ctx, inc.Name, SceneOptions{Workload: inc.Workload})
	if err != nil {
		res.Err = err
		return res, nil
	}
	defer func() {
		res.Took = time.Since(start)
		if !keep || res.Err != nil {
			s.Close(!res.Passed())
			scene = nil
		}
	}()
	s.say("%s: %s", inc.Name, inc.What)
	w := &watch{s: s, expect: inc.Expect, fired: res.Fired, seen: map[string]bool{},
		set: make(chan struct{}), allFired: make(chan struct{})}
	res.Err = c.play(ctx, s, inc, w)
	if res.Err == nil {
		res.Err = s.checkShares(ctx)
	}
	res.Others = w.others
	if res.Err == nil && inc.Diagnosis != nil {
		d := s.judge(ctx, *inc.Diagnosis)
		res.Diagnosed = &d
		switch {
		case d.Err != nil:
			s.say("DIAGNOSIS FAILED: %v", d.Err)
		case d.Right:
			s.say("diagnose: %s", d.Said)
		default:
			s.say("DIAGNOSIS WRONG: diagnose said %s; its report:\n%s", d.Said, d.Report)
		}
	}
	return res, s
}

// play runs the incident in s while w watches.
func (c *Cluster) play(ctx context.Context, s *Scene, inc Incident, w *watch) error {
	// Watch from the start: nothing may go pending while the operator starts either.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watchErr := make(chan error, 1)
	go func() { watchErr <- w.run(wctx) }()
	stopWatch := func() error {
		cancel()
		return <-watchErr
	}

	if inc.Before != nil {
		if err := inc.Before(ctx, s); err != nil {
			return errors.Join(fmt.Errorf("prepare: %w", err), stopWatch())
		}
	}
	if err := s.StartOperator(inc.Operator); err != nil {
		return errors.Join(err, stopWatch())
	}
	if inc.Inject != nil {
		if err := inc.Inject(ctx, s); err != nil {
			return errors.Join(fmt.Errorf("inject: %w", err), stopWatch())
		}
	}
	injected := time.Now().Add(inc.Delay)
	w.setInjected(injected)

	if len(inc.Expect) == 0 {
		s.say("watching for %s: no loopwatch alert may go pending", inc.Watch)
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), stopWatch())
		case <-time.After(inc.Watch):
		}
		return stopWatch()
	}
	var deadline time.Duration
	for _, a := range inc.Expect {
		deadline = max(deadline, budget(c.cfg, a))
	}
	// A known miss is watched for as long as the others: it may fire already.
	s.say("waiting up to %s after the injection for %v", deadline, names(inc.Expect))
	dctx, dcancel := context.WithDeadline(ctx, injected.Add(deadline))
	defer dcancel()
	select {
	case <-w.allFired:
		time.Sleep(tail)
	case <-dctx.Done():
		if ctx.Err() != nil {
			return errors.Join(ctx.Err(), stopWatch())
		}
	}
	return stopWatch()
}

// watch polls a scene's alerts.
type watch struct {
	s        *Scene
	expect   []*gen.Alert
	fired    map[string]time.Duration
	seen     map[string]bool
	others   []string
	injected time.Time
	set      chan struct{}
	allFired chan struct{}
}

func (w *watch) setInjected(t time.Time) {
	w.injected = t
	close(w.set)
}

// run polls every second until ctx ends; it reports an error only when Prometheus cannot be
// asked at all.
func (w *watch) run(ctx context.Context) error {
	var failures int
	var last error
	for {
		alerts, err := w.s.Alerts(ctx)
		if err != nil && ctx.Err() == nil {
			failures++
			last = err
			if failures >= 10 {
				return fmt.Errorf("watch alerts: %w", last)
			}
		}
		if err == nil {
			failures = 0
			w.observe(alerts)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}

// observe records the expected alerts that fire and every other alert.
func (w *watch) observe(alerts []Alert) {
	injected := w.injectedAt()
	for _, a := range alerts {
		if slices.ContainsFunc(w.expect, func(e *gen.Alert) bool { return e.FullName() == a.Name }) {
			if _, ok := w.fired[a.Name]; !ok && a.State == promv1.AlertStateFiring && !injected.IsZero() {
				w.fired[a.Name] = time.Since(injected).Round(time.Second)
				w.s.say("FIRING %s after %s", a, w.fired[a.Name])
				if len(w.fired) == len(w.expect) {
					close(w.allFired)
				}
			}
			continue
		}
		key := a.Name + " " + string(a.State)
		if !w.seen[key] {
			w.seen[key] = true
			w.others = append(w.others, key)
			sort.Strings(w.others)
			w.s.say("OTHER ALERT %s", a)
		}
	}
}

func (w *watch) injectedAt() time.Time {
	select {
	case <-w.set:
		return w.injected
	default:
		return time.Time{}
	}
}

func names(alerts []*gen.Alert) []string {
	var out []string
	for _, a := range alerts {
		out = append(out, a.FullName())
	}
	return out
}
