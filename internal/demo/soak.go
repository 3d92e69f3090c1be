package demo

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/loopwatch/loopwatch/gen"
)

// ProductionConfig is the default generator config — production `for:` durations, evaluation
// interval and thresholds — with this environment's selectors.
func ProductionConfig() gen.Config {
	cfg := gen.Default()
	cfg.Selectors.Controller = `job="` + operatorJob + `"`
	cfg.Selectors.ControllerTargets = `job="` + operatorJob + `"`
	cfg.Selectors.Exporter = `job="` + exporterJob + `"`
	return cfg
}

// SoakScrapeInterval is Prometheus' scrape interval in the soak, a common production setting.
const SoakScrapeInterval = 30 * time.Second

// SoakOptions configure Soak.
type SoakOptions struct {
	// Out receives the narration; default os.Stdout.
	Out io.Writer
	// Duration is the soak's length; default 30 minutes. The restart happens at a third of it,
	// the handover at two thirds.
	Duration time.Duration
	// Step is the length of a row of the table; default 5 minutes.
	Step time.Duration
}

// SoakRow is one step of the soak: what happened and the alerts seen pending or firing.
type SoakRow struct {
	From, To time.Duration
	Events   []string
	Pending  []string
	Firing   []string
}

// SoakResult is the soak's table.
type SoakResult struct {
	Rows []SoakRow
	Took time.Duration
}

// Silent reports whether no alert went pending or fired.
func (r SoakResult) Silent() bool {
	for _, row := range r.Rows {
		if len(row.Pending)+len(row.Firing) > 0 {
			return false
		}
	}
	return true
}

// soakPods: two replicas, then two that replace them in the rolling restart, then the one that
// replaces the leader drained at the handover.
const soakPods = 5

// Soak runs a healthy operator under production rules for Duration with churn — Backups on
// schedules (snapshots, retention, status updates), a user editing specs, Backups created and
// deleted (finalizers), a rolling restart of both replicas, a handover when the leader's pod goes
// away — and records every loopwatch alert that goes pending or fires. There must be none, and
// every recorded share must stay within [0, 1] (an error when one did not).
func Soak(ctx context.Context, opts SoakOptions) (res SoakResult, err error) {
	if opts.Out == nil {
		opts.Out = os.Stdout
	}
	if opts.Duration == 0 {
		opts.Duration = 30 * time.Minute
	}
	if opts.Step == 0 {
		opts.Step = 5 * time.Minute
	}
	cfg := ProductionConfig()
	c, err := StartCluster(ctx, Options{Out: opts.Out, Config: &cfg})
	if err != nil {
		return res, err
	}
	start := time.Now()
	s, err := c.NewScene(ctx, "soak", SceneOptions{Pods: soakPods, ScrapeInterval: SoakScrapeInterval})
	if err != nil {
		c.Close(true)
		return res, err
	}
	defer func() {
		res.Took = time.Since(start)
		s.Close(err != nil || !res.Silent())
		c.Close(err != nil || !res.Silent())
	}()
	for t := time.Duration(0); t < opts.Duration; t += opts.Step {
		res.Rows = append(res.Rows, SoakRow{From: t, To: min(t+opts.Step, opts.Duration)})
	}
	row := func() *SoakRow {
		i := min(int(time.Since(start)/opts.Step), len(res.Rows)-1)
		return &res.Rows[i]
	}
	event := func(format string, args ...any) {
		e := fmt.Sprintf(format, args...)
		s.say("SOAK %s", e)
		r := row()
		r.Events = append(r.Events, e)
	}

	// Watch every 5s for the whole soak.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.Go("watching alerts", func(context.Context) error {
		for wctx.Err() == nil {
			alerts, err := s.Alerts(wctx)
			if err == nil {
				r := row()
				for _, a := range alerts {
					list := &r.Pending
					if a.State == "firing" {
						list = &r.Firing
					}
					if !slices.Contains(*list, a.Name) {
						*list = append(*list, a.Name)
						s.say("SOAK ALERT %s", a)
					}
				}
			}
			select {
			case <-wctx.Done():
			case <-time.After(5 * time.Second):
			}
		}
		return nil
	})

	scheduled := Backups{Prefix: "hourly-and-minutely", N: 10, IntervalSeconds: 60}
	if err := s.Create(ctx, scheduled); err != nil {
		return res, err
	}
	for _, i := range []int{0, 1} {
		if err := s.StartPod(i); err != nil {
			return res, err
		}
	}
	event("2 replicas (%s, %s), 10 Backups snapshotting every minute (retention prunes)", s.PodName(0), s.PodName(1))
	if err := s.WaitReady(ctx, scheduled.N); err != nil {
		return res, err
	}
	s.EditEvery(scheduled, 15*time.Second)
	s.Go("creating and deleting Backups", func(ctx context.Context) error { return s.adhoc(ctx, 3*time.Minute) })
	event("a user edits a spec every 15s and creates a Backup every 3m, deleting the one before")

	at := func(d time.Duration) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Until(start.Add(d))):
			return nil
		}
	}
	if err := at(opts.Duration / 3); err != nil {
		return res, err
	}
	// A rolling restart (kubectl rollout restart): each new pod starts before an old one goes.
	for _, step := range []struct{ start, stop int }{{2, 1}, {3, 0}} {
		if err := s.StartPod(step.start); err != nil {
			return res, err
		}
		if err := s.WaitPodUp(ctx, step.start); err != nil {
			return res, err
		}
		leader := s.Leader(ctx)
		s.StopPod(step.stop)
		took := s.waitLeader(ctx, step.stop)
		if leader == step.stop {
			event("rolling restart: %s replaces %s, the leader; %s leads %s later", s.PodName(step.start), s.PodName(step.stop), s.PodName(s.Leader(ctx)), took.Round(100*time.Millisecond))
		} else {
			event("rolling restart: %s replaces %s (standby)", s.PodName(step.start), s.PodName(step.stop))
		}
	}
	if err := at(2 * opts.Duration / 3); err != nil {
		return res, err
	}
	// The leader's node is drained: its pod goes, a new one replaces it.
	leader := s.Leader(ctx)
	if leader < 0 {
		return res, fmt.Errorf("no replica leads before the handover")
	}
	s.StopPod(leader)
	took := s.waitLeader(ctx, leader)
	event("handover: %s (leader) drained; %s leads %s later", s.PodName(leader), s.PodName(s.Leader(ctx)), took.Round(100*time.Millisecond))
	if err := s.StartPod(4); err != nil {
		return res, err
	}
	event("%s replaces %s", s.PodName(4), s.PodName(leader))
	if err := at(opts.Duration); err != nil {
		return res, err
	}
	cancel()
	// Production intervals put the groups whose outputs a ratio divides up to a minute apart.
	return res, s.checkShares(ctx)
}

// waitLeader waits until a replica other than old leads and returns how long it took.
func (s *Scene) waitLeader(ctx context.Context, old int) time.Duration {
	began := time.Now()
	_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		l := s.Leader(ctx)
		return l >= 0 && l != old, nil
	})
	return time.Since(began)
}

// adhoc creates a Backup every interval and deletes the one created before it: finalizers,
// snapshot clean-up and store deletes as part of the churn.
func (s *Scene) adhoc(ctx context.Context, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for i := 0; ; i++ {
		b := Backups{Prefix: fmt.Sprintf("adhoc%d", i), N: 1}
		if err := s.Create(ctx, b); err != nil {
			return err
		}
		if i > 0 {
			if err := s.Delete(ctx, Backups{Prefix: fmt.Sprintf("adhoc%d", i-1), N: 1}, 0); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// WriteSoakTable writes the soak's table: per step, what happened and the alerts pending or
// firing.
func WriteSoakTable(w io.Writer, r SoakResult) {
	fmt.Fprintln(w, "| time | what happened | pending | firing |")
	fmt.Fprintln(w, "|---|---|---|---|")
	list := func(xs []string) string {
		if len(xs) == 0 {
			return "none"
		}
		return "**" + strings.Join(xs, ", ") + "**"
	}
	for _, row := range r.Rows {
		events := strings.Join(row.Events, "; ")
		if events == "" {
			events = "churn"
		}
		fmt.Fprintf(w, "| %s–%s | %s | %s | %s |\n", fmtMinutes(row.From), fmtMinutes(row.To), events, list(row.Pending), list(row.Firing))
	}
	verdict := "0 alerts pending or firing"
	if !r.Silent() {
		verdict = "ALERTS WENT PENDING OR FIRED"
	}
	fmt.Fprintf(w, "\n%s; wall time %s.\n", verdict, r.Took.Round(time.Second))
}

func fmtMinutes(d time.Duration) string {
	return fmt.Sprintf("%gm", d.Round(time.Second).Minutes())
}
