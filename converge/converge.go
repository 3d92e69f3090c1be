// Package converge is a test helper for controller authors: it runs
// reconcilers against a real API server until they stop writing, then checks
// that one more reconcile of every object makes zero writes and a bounded
// number of calls. A reconciler that writes on every pass (a timestamp
// annotation, a status field that never settles, a create without
// expectations) fails it, with the offending writes listed, before it reaches
// production (seed 000's "detect infinite reconcile loops before deployment").
package converge

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/loopwatch/loopwatch/instrument"
)

// Target is one reconciler to drive and the objects to drive it with.
type Target struct {
	// Name identifies the reconciler in reports. Required.
	Name string
	// New builds the reconciler on the instrumented client it is given. Required.
	New func(client.Client) reconcile.Reconciler
	// Requests lists the objects to reconcile; it is called before every pass,
	// so objects the reconcilers create are picked up. Required.
	Requests func(ctx context.Context) ([]reconcile.Request, error)
	// MaxCalls bounds the calls (reads and writes) of one reconcile in the
	// final pass. Defaults to 10.
	MaxCalls int
}

// Config drives a convergence run.
type Config struct {
	// Client is the client the reconcilers use, normally a cache-backed client
	// of a started manager or cluster. Required.
	Client client.Client
	// Targets are the reconcilers. At least one is required.
	Targets []Target
	// MaxPasses bounds the passes before giving up. Defaults to 30.
	MaxPasses int
	// Settle is the pause between passes, so the cache sees the previous
	// pass's writes. Defaults to 300ms.
	Settle time.Duration
}

// Write is a write made by a reconcile.
type Write struct {
	// Target is the reconciler's name.
	Target string
	// Request is the object reconciled.
	Request reconcile.Request
	// Call is the write.
	Call instrument.Call
}

// String renders "target ns/name: patch Backup ns/name {...}".
func (w Write) String() string {
	return fmt.Sprintf("%s %s: %s", w.Target, w.Request, w.Call)
}

// Report says what happened.
type Report struct {
	// Passes is how many passes it took until one made no write.
	Passes int
	// Reconciles is how many reconciles the final pass ran.
	Reconciles int
	// FinalCalls is the total calls of the final pass.
	FinalCalls int
	// MaxCallsSeen is the most calls one reconcile made in the final pass.
	MaxCallsSeen int
	// Writes are the writes of the final pass (empty when it passed).
	Writes []Write
	// OverBudget lists reconciles of the final pass that made too many calls.
	OverBudget []string
	// Requeues lists reconciles of the final pass that asked to run again within
	// MinRequeueAfter: a converged object reconciled again at once, for ever.
	Requeues []string
}

// MinRequeueAfter is the shortest RequeueAfter a converged reconcile may return: sooner, the
// controller reconciles the object in a loop although nothing changes.
const MinRequeueAfter = time.Second

func (c *Config) validate() error {
	var errs []error
	if c.Client == nil {
		errs = append(errs, errors.New("converge: Client is required"))
	}
	if len(c.Targets) == 0 {
		errs = append(errs, errors.New("converge: at least one Target is required"))
	}
	for i, t := range c.Targets {
		if t.Name == "" || t.New == nil || t.Requests == nil {
			errs = append(errs, fmt.Errorf("converge: target %d needs Name, New and Requests", i))
		}
	}
	if c.MaxPasses <= 0 {
		c.MaxPasses = 30
	}
	if c.Settle <= 0 {
		c.Settle = 300 * time.Millisecond
	}
	for i := range c.Targets {
		if c.Targets[i].MaxCalls <= 0 {
			c.Targets[i].MaxCalls = 10
		}
	}
	return errors.Join(errs...)
}

type built struct {
	t Target
	r reconcile.Reconciler
}

// Run drives the targets to convergence, then runs the final pass and checks
// it. The error lists every offending write and over-budget reconcile.
func Run(ctx context.Context, cfg Config) (Report, error) {
	if err := cfg.validate(); err != nil {
		return Report{}, err
	}
	targets := make([]built, len(cfg.Targets))
	for i, t := range cfg.Targets {
		targets[i] = built{t: t, r: t.New(instrument.NewClient("converge/"+t.Name, cfg.Client, nil))}
	}
	var rep Report
	converged := false
	var last pass
	for rep.Passes = 1; rep.Passes <= cfg.MaxPasses; rep.Passes++ {
		p, err := runPass(ctx, targets)
		if err != nil {
			return rep, err
		}
		last = p
		if len(p.writes) == 0 && len(p.errs) == 0 {
			converged = true
			break
		}
		if err := sleep(ctx, cfg.Settle); err != nil {
			return rep, err
		}
	}
	if !converged {
		rep.Passes = cfg.MaxPasses
		rep.Writes = last.writes
		return rep, fmt.Errorf("converge: still writing after %d passes:\n%s", cfg.MaxPasses, last.describe())
	}
	if err := sleep(ctx, cfg.Settle); err != nil {
		return rep, err
	}
	final, err := runPass(ctx, targets)
	if err != nil {
		return rep, err
	}
	rep.Reconciles, rep.FinalCalls, rep.MaxCallsSeen = final.reconciles, final.calls, final.maxCalls
	rep.Writes, rep.OverBudget, rep.Requeues = final.writes, final.overBudget, final.requeues
	if len(final.empty) > 0 {
		return rep, fmt.Errorf("converge: nothing to reconcile for %s: Requests returned no request (check its namespace and selector)", strings.Join(final.empty, ", "))
	}
	if len(final.writes) > 0 || len(final.overBudget) > 0 || len(final.errs) > 0 || len(final.requeues) > 0 {
		return rep, fmt.Errorf("converge: the reconcile after convergence was not a no-op:\n%s", final.describe())
	}
	return rep, nil
}

// Assert is Run for tests: it fails t with the report when Run fails.
func Assert(ctx context.Context, t testing.TB, cfg Config) Report {
	t.Helper()
	rep, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

type pass struct {
	reconciles, calls, maxCalls int
	writes                      []Write
	overBudget                  []string
	errs                        []string
	requeues                    []string
	// empty are the targets whose Requests returned none.
	empty []string
}

func runPass(ctx context.Context, targets []built) (pass, error) {
	var p pass
	for _, b := range targets {
		reqs, err := b.t.Requests(ctx)
		if err != nil {
			return p, fmt.Errorf("converge: requests of %q: %w", b.t.Name, err)
		}
		if len(reqs) == 0 {
			p.empty = append(p.empty, b.t.Name)
		}
		for _, req := range reqs {
			rctx, tally := instrument.WithTally(ctx)
			res, rerr := b.r.Reconcile(rctx, req)
			if res.RequeueAfter > 0 && res.RequeueAfter < MinRequeueAfter {
				p.requeues = append(p.requeues, fmt.Sprintf("%s %s: RequeueAfter %s", b.t.Name, req, res.RequeueAfter))
			}
			calls := tally.Calls()
			p.reconciles++
			p.calls += len(calls)
			p.maxCalls = max(p.maxCalls, len(calls))
			if rerr != nil {
				p.errs = append(p.errs, fmt.Sprintf("%s %s: %v", b.t.Name, req, rerr))
			}
			for _, c := range tally.Writes() {
				p.writes = append(p.writes, Write{Target: b.t.Name, Request: req, Call: c})
			}
			if len(calls) > b.t.MaxCalls {
				p.overBudget = append(p.overBudget, fmt.Sprintf("%s %s: %d calls (budget %d)", b.t.Name, req, len(calls), b.t.MaxCalls))
			}
		}
	}
	return p, nil
}

func (p pass) describe() string {
	var b strings.Builder
	for _, w := range p.writes {
		fmt.Fprintf(&b, "  write: %s\n", w)
	}
	for _, o := range p.overBudget {
		fmt.Fprintf(&b, "  too many calls: %s\n", o)
	}
	for _, e := range p.errs {
		fmt.Fprintf(&b, "  error: %s\n", e)
	}
	for _, r := range p.requeues {
		fmt.Fprintf(&b, "  requeued at once: %s\n", r)
	}
	return b.String()
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
