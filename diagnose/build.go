package diagnose

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/loopwatch/loopwatch/catalogue"
	"github.com/loopwatch/loopwatch/gen"
)

// Bounds on the evidence rows of one signal.
const (
	maxConditionRows = 4
	maxContextRows   = 6
	maxSignalRows    = 3
)

// findings turns the alert instances of every check into findings, per controller and
// unattributed.
func (d *diagnosis) findings() (map[controllerKey][]*finding, []*finding) {
	per := map[controllerKey][]*finding{}
	var unattributed []*finding
	for _, run := range d.runs {
		if run.disabled {
			continue
		}
		op, th := "", (*float64)(nil)
		for _, c := range run.conditions {
			if c.threshold != nil {
				op, th = c.op, c.threshold
				break
			}
		}
		byKey := map[controllerKey]*finding{}
		var none *finding
		for _, s := range run.alert {
			if len(s.points) == 0 {
				continue
			}
			in := d.instanceOf(s)
			targets := d.inv.attribute(run.check, s.labels, in.last, d.step)
			if len(targets) == 0 {
				if none == nil {
					none = &finding{check: run.check, run: run, how: byNone, op: op, threshold: th}
					unattributed = append(unattributed, none)
				}
				none.instances = append(none.instances, in)
				continue
			}
			for _, t := range targets {
				f := byKey[t.key]
				if f == nil {
					f = &finding{check: run.check, run: run, how: t.how, op: op, threshold: th}
					byKey[t.key] = f
					per[t.key] = append(per[t.key], f)
				}
				if t.join.strength() > f.join.strength() {
					f.join, f.joinDetail = t.join, t.detail
				}
				f.instances = append(f.instances, in)
			}
		}
	}
	for _, fs := range per {
		for _, f := range fs {
			sortInstances(f)
		}
	}
	for _, f := range unattributed {
		sortInstances(f)
	}
	return per, unattributed
}

func sortInstances(f *finding) {
	slices.SortStableFunc(f.instances, func(a, b instance) int {
		x, y := &finding{check: f.check, op: f.op, threshold: f.threshold, instances: []instance{a}}, &finding{check: f.check, op: f.op, threshold: f.threshold, instances: []instance{b}}
		if c := compareStrength(x, y); c != 0 {
			return c
		}
		return strings.Compare(labelKey(a.labels), labelKey(b.labels))
	})
}

// instanceOf reads one alert instance from the condition's series.
func (d *diagnosis) instanceOf(s series) instance {
	first, last := s.lastRun(d.step)
	v, _ := s.at(last, d.step)
	l := make(map[string]string, len(s.labels))
	for k, x := range s.labels {
		if k != "__name__" {
			l[k] = x
		}
	}
	return instance{labels: l, value: v, peak: s.peak(), first: first, last: last, active: !last.Add(d.step / 2).Before(d.end)}
}

// report assembles the report from the evaluated checks.
func (d *diagnosis) report() Report {
	per, unattributed := d.findings()
	r := Report{
		SchemaVersion:  SchemaVersion,
		Prometheus:     d.client.base.String(),
		Window:         Window{Start: d.start.UTC(), End: d.end.UTC(), StepSeconds: d.step.Seconds()},
		RecordingRules: RecordingRules{Recorded: d.recorded, Inlined: d.inlined},
		Notes:          d.notes(),
	}
	for _, k := range d.inv.controllers {
		if d.opts.Controller != "" && k.name != d.opts.Controller {
			continue
		}
		r.Controllers = append(r.Controllers, d.controller(k, rank(per[k], d.step)))
	}
	// Unattributed findings are ordered like a controller's, but none explains another: they may
	// concern unrelated workloads.
	for _, f := range rank(unattributed, d.step) {
		if d.opts.Controller != "" && !f.check.gap {
			continue
		}
		f.role, f.explainedBy = RoleContributing, nil
		r.Unattributed = append(r.Unattributed, d.cause(f))
	}
	return r
}

// notes are the facts about the data that limit the diagnosis.
func (d *diagnosis) notes() []string {
	var out []string
	if len(d.inv.coverage[catalogue.AuditBatchesTotal.Name]) == 0 {
		out = append(out, fmt.Sprintf("no audit exporter metrics (%s) match selectors.exporter {%s}: write fights, hot objects, replica races, conflicts and relist storms were not checked",
			catalogue.AuditBatchesTotal.Name, d.opts.Config.Selectors.Exporter))
	}
	for _, w := range d.warnings {
		out = append(out, "prometheus warning: "+w)
	}
	return out
}

// controller builds the diagnosis of controller k from its ranked findings. The verdict comes
// from the checks that ran: a failure found makes the controller unhealthy; otherwise it is
// healthy as long as its reconcile counter, what every rate is taken against, is there and
// recent, and the checks that could not run are listed with why (a monitoring gap that blinds
// them, or the series they need missing). Only a counter that stopped or is too new leaves the
// controller insufficient-data.
func (d *diagnosis) controller(k controllerKey, fs []*finding) Controller {
	c := Controller{Cluster: k.cluster, Namespace: k.namespace, Job: k.job, Name: k.name}
	holds := map[*check]bool{}
	blinded := map[*gen.Alert]*check{}
	failures := 0
	for _, f := range fs {
		c.Causes = append(c.Causes, d.cause(f))
		holds[f.check] = true
		if !f.check.gap {
			failures++
		}
		for _, a := range f.check.blinds {
			if blinded[a] == nil {
				blinded[a] = f.check
			}
		}
	}
	var unrun []CheckResult
	for _, run := range d.runs {
		if run.check.scope == byNone {
			continue
		}
		res := CheckResult{Alert: run.check.alert.FullName(), Result: CheckOK}
		switch {
		case run.disabled:
			res.Result = CheckDisabled
		case holds[run.check]:
			res.Result = CheckHolds
		case blinded[run.check.alert] != nil:
			g := blinded[run.check.alert]
			res.Result, res.Detail = CheckNoData, fmt.Sprintf("%s (%s)", g.reason, g.alert.FullName())
		default:
			for _, m := range run.check.needs {
				if !d.inv.has(m, k) {
					res.Result, res.Detail = CheckNoData, fmt.Sprintf("no %s series with two samples in the window", seriesName(m))
					if run.check.optional {
						res.Result = CheckNotApplicable
					}
					break
				}
			}
		}
		if res.Result == CheckNoData {
			unrun = append(unrun, res)
		}
		c.Checks = append(c.Checks, res)
	}
	c.Signals = d.signals(k)
	n := d.inv.samples(catalogue.ControllerRuntimeReconcileTotal, k)
	switch {
	case failures > 0:
		c.Verdict, c.Headline = Unhealthy, c.Causes[0].Summary
	case !d.inv.reporting[k]:
		c.Verdict, c.Headline = InsufficientData, fmt.Sprintf("Not known to be healthy: its %s series stopped within the window: the process stopped, was scaled to zero, or is no longer scraped (up{job=%q}).", catalogue.ControllerRuntimeReconcileTotal.Name, k.job)
	case n < minSamples:
		c.Verdict, c.Headline = InsufficientData, fmt.Sprintf("Not known to be healthy: %s has %g samples in the window, too few for a rate.", catalogue.ControllerRuntimeReconcileTotal.Name, n)
	case len(unrun) > 0:
		c.Verdict, c.Headline = Healthy, "Nothing wrong in the checks that ran on data; "+unrunText(unrun)+"."
	default:
		c.Verdict, c.Headline = Healthy, "Every check ran on data and found nothing wrong."
	}
	return c
}

// unrunText says which checks could not run and why, the checks of one reason together.
func unrunText(unrun []CheckResult) string {
	var reasons []string
	by := map[string][]string{}
	for _, r := range unrun {
		if _, ok := by[r.Detail]; !ok {
			reasons = append(reasons, r.Detail)
		}
		by[r.Detail] = append(by[r.Detail], strings.TrimPrefix(r.Alert, "Loopwatch"))
	}
	parts := make([]string, len(reasons))
	for i, reason := range reasons {
		parts[i] = strings.Join(by[reason], ", ") + ", because " + reason
	}
	verb := "checks could not run"
	if len(unrun) == 1 {
		verb = "check could not run"
	}
	return fmt.Sprintf("%d %s: %s", len(unrun), verb, strings.Join(parts, "; "))
}

// seriesName is the series a family's presence is judged by.
func seriesName(m catalogue.Metric) string {
	if m.Type == catalogue.Histogram {
		return m.Name + "_count"
	}
	return m.Name
}

// cause renders a ranked finding.
func (d *diagnosis) cause(f *finding) Cause {
	in := f.instances[0]
	a := f.check.alert
	c := Cause{
		Alert:       a.FullName(),
		Role:        f.role,
		Status:      StatusEarlier,
		Severity:    string(d.opts.Config.Alerts[a.Key].Severity),
		Summary:     a.Summary,
		Labels:      in.labels,
		Instances:   len(f.instances),
		Attribution: string(f.how),
		Join:        string(f.join),
		JoinDetail:  f.joinDetail,
		Value:       number(in.value),
		Threshold:   f.threshold,
		FirstSeen:   in.first.UTC(),
		LastSeen:    in.last.UTC(),
		HeldSeconds: in.last.Sub(in.first).Seconds(),
		ForSeconds:  time.Duration(f.run.rule.For).Seconds(),
		Query:       f.run.query,
		Evidence:    d.evidence(f.run, in),
		NextStep:    f.check.nextStep(in.labels),
		Panel:       d.panel(f.check),
	}
	if in.active {
		c.Status = StatusActive
	}
	if f.explainedBy != nil {
		c.ExplainedBy = f.explainedBy.check.alert.FullName()
	}
	if ann, ok, err := d.model.Annotations(a, in.labels, in.value); ok && err == nil {
		c.Summary, c.Description, c.Runbook = ann["summary"], ann["description"], ann["runbook_url"]
	}
	for _, x := range f.instances {
		for _, l := range actorLabels {
			if v := x.labels[l]; v != "" && !slices.Contains(c.Actors, v) {
				c.Actors = append(c.Actors, v)
			}
		}
	}
	sort.Strings(c.Actors)
	return c
}

// panel names the dashboard panel of a check's alert.
func (d *diagnosis) panel(c *check) string {
	title := c.alert.Panel.Dashboard
	for _, db := range d.model.Dashboards {
		if db.Key == c.alert.Panel.Dashboard {
			title = db.Title
		}
	}
	return title + " › " + c.alert.Panel.Title
}

// evidence returns the numbers behind one alert instance when it last held: every signal of the
// alert's conditions, then the check's context, each matched to the instance's labels.
func (d *diagnosis) evidence(run *checkRun, in instance) []Evidence {
	var out []Evidence
	for _, sd := range run.signals {
		rows := d.rows(sd, in.labels, in.last, maxConditionRows)
		if len(rows) == 0 {
			rows = []Evidence{{Signal: sd.spec.name, Unit: sd.spec.unit, Query: sd.query}}
		}
		for i := range rows {
			if !sd.second {
				rows[i].Compare, rows[i].Threshold = sd.condition.op, sd.condition.threshold
			}
		}
		out = append(out, rows...)
	}
	for _, sd := range run.extras {
		out = append(out, d.rows(sd, in.labels, in.last, maxContextRows)...)
	}
	return out
}

// rows returns the values at t of the series of sd that match ref, largest first, at most n.
func (d *diagnosis) rows(sd signalData, ref map[string]string, t time.Time, n int) []Evidence {
	var out []Evidence
	for _, s := range sd.series {
		if !matches(s.labels, ref) {
			continue
		}
		v, ok := s.at(t, d.step)
		if !ok || math.IsNaN(v) {
			continue
		}
		l := make(map[string]string, len(s.labels))
		for k, x := range s.labels {
			if k != "__name__" {
				l[k] = x
			}
		}
		out = append(out, Evidence{Signal: sd.spec.name, Value: number(v), Unit: sd.spec.unit, Labels: l, Query: sd.query})
	}
	slices.SortStableFunc(out, func(a, b Evidence) int {
		va, vb := math.Inf(1), math.Inf(1)
		if a.Value != nil {
			va = *a.Value
		}
		if b.Value != nil {
			vb = *b.Value
		}
		switch {
		case va > vb:
			return -1
		case va < vb:
			return 1
		}
		return 0
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// signals are controller k's key numbers at the end of the window.
func (d *diagnosis) signals(k controllerKey) []Evidence {
	ref := map[string]string{d.opts.Config.ClusterLabel: k.cluster, "namespace": k.namespace, "job": k.job, catalogue.LabelController: k.name}
	var out []Evidence
	seen := map[string]bool{}
	for _, run := range d.runs {
		if run.disabled || (run.check.scope != byController && run.check.scope != byProcess) {
			continue
		}
		for _, sd := range run.signals {
			if !sd.spec.headline || seen[sd.spec.name] {
				continue
			}
			seen[sd.spec.name] = true
			out = append(out, d.rows(sd, ref, d.end, maxSignalRows)...)
		}
	}
	return out
}
