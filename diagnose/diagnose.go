package diagnose

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"

	"github.com/loopwatch/loopwatch/catalogue"
	"github.com/loopwatch/loopwatch/gen"
)

// Options configure a diagnosis.
type Options struct {
	// Prometheus is the base URL of the Prometheus HTTP API (Prometheus, Thanos Query, Mimir's
	// Prometheus-compatible endpoint), e.g. http://localhost:9090.
	Prometheus string
	// Controller restricts the report to the controllers of this name (the controller label);
	// empty means every controller found.
	Controller string
	// Since is the length of the window looked at, ending at End. Default 30m.
	Since time.Duration
	// End is the end of the window. Default: now.
	End time.Time
	// Config is the loopwatch config the rules were generated from: selectors, cluster label,
	// thresholds. The zero value means gen.Default().
	Config gen.Config
	// Timeout bounds each request to Prometheus. Default 30s.
	Timeout time.Duration
	// MaxResponseBytes bounds each response body. Default 32 MiB.
	MaxResponseBytes int64
	// Concurrency is how many queries run at once. Default 4.
	Concurrency int
}

// Defaults of Options.
const (
	DefaultSince            = 30 * time.Minute
	DefaultTimeout          = 30 * time.Second
	DefaultMaxResponseBytes = 32 << 20
	DefaultConcurrency      = 4
	// steps is how many evaluations of each condition cover the window.
	steps = 60
)

// complete fills in the defaults of the options left zero, and reports every option that is
// out of range, each under the name of its flag.
func (o Options) complete() (Options, error) {
	var errs []error
	if o.Prometheus == "" {
		errs = append(errs, errors.New("the Prometheus URL is required"))
	}
	if o.Since < 0 {
		errs = append(errs, fmt.Errorf("since must be positive, got %s", o.Since))
	}
	if o.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout must be positive, got %s", o.Timeout))
	}
	if o.MaxResponseBytes < 0 {
		errs = append(errs, fmt.Errorf("max-response-bytes must be positive, got %d", o.MaxResponseBytes))
	}
	if o.Concurrency < 0 {
		errs = append(errs, fmt.Errorf("concurrency must be positive, got %d", o.Concurrency))
	}
	if len(errs) > 0 {
		return o, errors.Join(errs...)
	}
	if o.Since == 0 {
		o.Since = DefaultSince
	}
	if o.End.IsZero() {
		o.End = time.Now()
	}
	if reflect.ValueOf(o.Config).IsZero() {
		o.Config = gen.Default()
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxResponseBytes == 0 {
		o.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if o.Concurrency == 0 {
		o.Concurrency = DefaultConcurrency
	}
	return o, nil
}

// Run diagnoses the controllers Prometheus knows, over the window [End-Since, End]. It fails
// when Prometheus cannot be queried (ErrUnreachable, ErrNotPrometheus, ErrResponseTooLarge),
// when it has no controller-runtime metrics for the configured selector (ErrNoControllers), and
// when Options.Controller names no controller found (ErrUnknownController).
func Run(ctx context.Context, opts Options) (Report, error) {
	opts, err := opts.complete()
	if err != nil {
		return Report{}, err
	}
	m, err := gen.Build(opts.Config)
	if err != nil {
		return Report{}, fmt.Errorf("config: %w", err)
	}
	client, err := newPromClient(opts.Prometheus, opts.Timeout, opts.MaxResponseBytes)
	if err != nil {
		return Report{}, err
	}
	d := newDiagnosis(opts, m, client)
	if _, _, err := client.query(ctx, "vector(1)", d.end); err != nil {
		return Report{}, err
	}
	if err := d.loadRecordings(ctx); err != nil {
		return Report{}, err
	}
	if err := d.loadInventory(ctx); err != nil {
		return Report{}, err
	}
	if err := d.evaluate(ctx); err != nil {
		return Report{}, err
	}
	return d.report(), nil
}

// diagnosis is one run: its window, the data fetched and what was concluded.
type diagnosis struct {
	opts   Options
	model  *gen.Model
	client *promClient
	q      queries

	start, end time.Time
	step       time.Duration

	inl       *inliner
	recorded  []string
	inlined   []string
	inv       *inventory
	runs      []*checkRun
	warnings  []string
	warningMu sync.Mutex
}

func newDiagnosis(opts Options, m *gen.Model, c *promClient) *diagnosis {
	step := max(time.Second, (opts.Since / steps).Truncate(time.Second))
	n := (opts.Since + step - 1) / step
	end := opts.End.Truncate(time.Second)
	return &diagnosis{
		opts: opts, model: m, client: c, q: queries{cfg: opts.Config},
		start: end.Add(-n * step), end: end, step: step,
	}
}

// window is the diagnosis window as a PromQL range.
func (d *diagnosis) window() string { return model.Duration(d.end.Sub(d.start)).String() }

// loadRecordings finds which of loopwatch's recording rules Prometheus has (loaded, or their
// series present) and prepares the inliner for the others.
func (d *diagnosis) loadRecordings(ctx context.Context) error {
	groups, err := d.model.RuleGroups()
	if err != nil {
		return err
	}
	var names []string
	exprs := map[string]string{}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				names = append(names, r.Record)
				exprs[r.Record] = r.Expr
			}
		}
	}
	present := d.loadedRecordings(ctx)
	if len(names) > 0 {
		v, _, err := d.client.query(ctx, `count by (__name__) ({__name__=~"`+strings.Join(names, "|")+`"})`, d.end)
		if err != nil {
			return fmt.Errorf("look for loopwatch's recording rules: %w", err)
		}
		for _, s := range v {
			present[string(s.Metric[model.MetricNameLabel])] = true
		}
	}
	d.inl = &inliner{missing: map[string]string{}, interval: time.Duration(d.opts.Config.RuleInterval)}
	for _, n := range names {
		if present[n] {
			d.recorded = append(d.recorded, n)
		} else {
			d.inlined = append(d.inlined, n)
			d.inl.missing[n] = exprs[n]
		}
	}
	return nil
}

// loadedRecordings returns the recording rules Prometheus has loaded. A Prometheus without the
// rules API (or a query frontend in front of several) gives none: the recorded series then
// decide alone.
func (d *diagnosis) loadedRecordings(ctx context.Context) map[string]bool {
	out := map[string]bool{}
	raw, _, err := d.client.get(ctx, "/api/v1/rules", url.Values{"type": {"record"}})
	if err != nil {
		return out
	}
	var data struct {
		Groups []struct {
			Rules []struct {
				Name string `json:"name"`
				Type string `json:"type"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if json.Unmarshal(raw, &data) != nil {
		return out
	}
	for _, g := range data.Groups {
		for _, r := range g.Rules {
			if r.Type == "recording" {
				out[r.Name] = true
			}
		}
	}
	return out
}

// checkRun is one check evaluated over the window.
type checkRun struct {
	check    *check
	disabled bool
	rule     rulefmt.Rule
	// query is the alert's expression as evaluated (recordings inlined where missing).
	query      string
	conditions []condition
	// alert is the condition's result: one series per alert instance, a point wherever it held.
	alert []series
	// signals holds the data of every signal of every condition, in order; extras the context.
	signals []signalData
	extras  []signalData
}

// signalData is one signal and its values over the window.
type signalData struct {
	spec      signalSpec
	query     string
	condition *condition
	// second marks the right-hand signal of a comparison between two signals.
	second bool
	series []series
}

// plan builds a run of every check: the alert's expression as it will be evaluated, its
// conditions and signals, and the check's context queries. It queries nothing.
func (d *diagnosis) plan() error {
	d.runs = nil
	for _, c := range checks() {
		run := &checkRun{check: c}
		d.runs = append(d.runs, run)
		rule, ok := d.model.AlertRule(c.alert)
		if !ok {
			run.disabled = true
			continue
		}
		run.rule = rule
		conds, err := conditions(rule.Expr)
		if err != nil {
			return err
		}
		run.conditions = conds
		if run.query, err = d.inl.rewrite(rule.Expr); err != nil {
			return err
		}
		if len(conds) == 0 {
			// An alert without comparisons (a series without its counterpart): its own value is
			// the evidence.
			conds = []condition{{signals: []string{rule.Expr}}}
			run.conditions = conds
		}
		specs := c.signals
		if specs == nil {
			specs = derivedSignals(conds)
		}
		n := 0
		for _, cond := range conds {
			n += len(cond.signals)
		}
		if n != len(specs) {
			return fmt.Errorf("check %s names %d signals, its alert's expression compares %d", c.alert.FullName(), len(specs), n)
		}
		k := 0
		for i := range conds {
			for j, s := range conds[i].signals {
				q, err := d.inl.rewrite(s)
				if err != nil {
					return err
				}
				run.signals = append(run.signals, signalData{spec: specs[k], query: q, condition: &run.conditions[i], second: j == 1})
				k++
			}
		}
		if c.extras != nil {
			for _, spec := range c.extras(d.q) {
				run.extras = append(run.extras, signalData{spec: spec, query: spec.query})
			}
		}
	}
	return nil
}

// evaluate plans every check and runs its queries over the window, at most
// Options.Concurrency at a time.
func (d *diagnosis) evaluate(ctx context.Context) error {
	if err := d.plan(); err != nil {
		return err
	}
	var tasks []func(context.Context) error
	for _, run := range d.runs {
		if run.disabled {
			continue
		}
		tasks = append(tasks, d.rangeTask(run.query, &run.alert))
		for i := range run.signals {
			tasks = append(tasks, d.rangeTask(run.signals[i].query, &run.signals[i].series))
		}
		for i := range run.extras {
			tasks = append(tasks, d.rangeTask(run.extras[i].query, &run.extras[i].series))
		}
	}
	calls, reconciles := d.q.activity()
	tasks = append(tasks, d.rangeTask(calls, &d.inv.calls), d.rangeTask(reconciles, &d.inv.reconciles))
	return d.runAll(ctx, tasks)
}

// rangeTask returns a task that evaluates query over the window into out.
func (d *diagnosis) rangeTask(query string, out *[]series) func(context.Context) error {
	return func(ctx context.Context) error {
		m, warnings, err := d.client.queryRange(ctx, query, d.start, d.end, d.step)
		if err != nil {
			return err
		}
		d.warn(warnings)
		*out = fromMatrix(m)
		return nil
	}
}

// instantTask returns a task that evaluates query at the end of the window into out.
func (d *diagnosis) instantTask(query string, out *model.Vector) func(context.Context) error {
	return func(ctx context.Context) error {
		v, warnings, err := d.client.query(ctx, query, d.end)
		if err != nil {
			return err
		}
		d.warn(warnings)
		*out = v
		return nil
	}
}

// maxWarnings bounds the Prometheus warnings kept in the report's notes.
const maxWarnings = 5

func (d *diagnosis) warn(ws []string) {
	d.warningMu.Lock()
	defer d.warningMu.Unlock()
	for _, w := range ws {
		if len(d.warnings) < maxWarnings && !slices.Contains(d.warnings, w) {
			d.warnings = append(d.warnings, w)
		}
	}
}

// runAll runs tasks with at most Options.Concurrency at once and returns the first error; the
// others are cancelled.
func (d *diagnosis) runAll(ctx context.Context, tasks []func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, d.opts.Concurrency)
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for _, t := range tasks {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := t(ctx); err != nil {
				once.Do(func() { first = err; cancel() })
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// neededFamilies are the families whose presence the checks depend on, controller_runtime's
// reconcile counter (the inventory) first.
func neededFamilies() []catalogue.Metric {
	out := []catalogue.Metric{catalogue.ControllerRuntimeReconcileTotal}
	for _, c := range checks() {
		for _, m := range c.needs {
			if !slices.ContainsFunc(out, func(x catalogue.Metric) bool { return x.Name == m.Name }) {
				out = append(out, m)
			}
		}
	}
	return out
}
