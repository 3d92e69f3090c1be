package diagnose

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// identityLabels are labels every evidence row of a controller shares; the text leaves them out.
var identityLabels = map[string]bool{"namespace": true, "job": true, "controller": true, "__name__": true}

// WriteText writes the report for a person: per controller the verdict, then each cause with its
// numbers, the PromQL that produced them and the next step.
func (r Report) WriteText(w io.Writer) error {
	p := &printer{w: w}
	p.f("loopwatch diagnose · %s · %s → %s UTC (every %s)\n", r.Prometheus,
		r.Window.Start.UTC().Format("2006-01-02 15:04:05"), r.Window.End.UTC().Format("15:04:05"),
		model.Duration(time.Duration(r.Window.StepSeconds*float64(time.Second))))
	p.f("recording rules: %d recorded, %d computed from raw metrics\n", len(r.RecordingRules.Recorded), len(r.RecordingRules.Inlined))
	counts := map[Verdict]int{}
	for _, c := range r.Controllers {
		counts[c.Verdict]++
	}
	p.f("%d controllers: %d unhealthy, %d insufficient data, %d healthy\n",
		len(r.Controllers), counts[Unhealthy], counts[InsufficientData], counts[Healthy])
	for _, c := range r.Controllers {
		p.f("\n%s  %s\n", verdictWord(c.Verdict), c.identity())
		p.f("  %s\n", c.Headline)
		for i, cause := range c.Causes {
			role := strings.ToUpper(string(cause.Role))
			switch cause.Role {
			case RoleSymptom:
				role = "SYMPTOM of " + cause.ExplainedBy
			case RoleGap:
				role = "MONITORING GAP"
			}
			p.cause(i+1, cause, role)
		}
		p.signals(c.Signals)
		p.checks(c.Checks)
	}
	if len(r.Unattributed) > 0 {
		p.f("\nNOT TIED TO A CONTROLLER FOUND\n")
		for i, cause := range r.Unattributed {
			p.cause(i+1, cause, "FINDING")
		}
	}
	if len(r.Notes) > 0 {
		p.f("\nnotes:\n")
		for _, n := range r.Notes {
			p.f("  - %s\n", n)
		}
	}
	return p.err
}

func (c Controller) identity() string {
	s := c.Namespace + "/" + c.Job + " controller " + c.Name
	if c.Cluster != "" {
		s = "cluster " + c.Cluster + " " + s
	}
	return s
}

func verdictWord(v Verdict) string {
	switch v {
	case Unhealthy:
		return "UNHEALTHY"
	case Healthy:
		return "HEALTHY"
	}
	return "INSUFFICIENT DATA"
}

type printer struct {
	w   io.Writer
	err error
}

func (p *printer) f(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

func (p *printer) cause(n int, c Cause, role string) {
	when := fmt.Sprintf("held %s until %s", humanDuration(c.HeldSeconds), c.LastSeen.Format("15:04:05"))
	if c.Status == StatusActive {
		when = fmt.Sprintf("active for %s", humanDuration(c.HeldSeconds))
	}
	firing := fmt.Sprintf("the alert fires once it holds %s", humanDuration(c.ForSeconds))
	if c.HeldSeconds >= c.ForSeconds {
		firing = fmt.Sprintf("past the alert's for of %s", humanDuration(c.ForSeconds))
	}
	p.f("  %d. %s  %s [%s] %s (%s)\n", n, role, c.Alert, c.Severity, when, firing)
	p.f("     %s\n", c.Description)
	if c.Instances > 1 {
		p.f("     %d instances; the strongest: %s\n", c.Instances, labelText(c.Labels, nil))
	}
	if len(c.Actors) > 0 {
		p.f("     actors: %s\n", strings.Join(c.Actors, " ⇄ "))
	}
	if c.Attribution == string(byProcess) || c.Attribution == string(byActor) {
		p.f("     tied to this controller by %s (%s)\n", c.Attribution, attributionText(c.Attribution))
	}
	if c.Join != "" {
		p.f("     actor joined by %s: %s\n", c.Join, c.JoinDetail)
	}
	p.f("     evidence:\n")
	p.evidence(c.Evidence, "       ")
	p.f("     condition evaluated:\n")
	for _, l := range strings.Split(c.Query, "\n") {
		p.f("       %s\n", l)
	}
	p.f("     next: %s\n", c.NextStep)
	p.f("     runbook: %s\n     panel: %s\n", c.Runbook, c.Panel)
}

func attributionText(how string) string {
	if how == string(byProcess) {
		return "a per-pod signal, given to the busiest controller of the workload"
	}
	return "the audit actor runs as this workload, joined as the next line says; the object's resource names the controller"
}

// evidence prints rows grouped by query: the numbers, then the PromQL that produced them.
func (p *printer) evidence(rows []Evidence, indent string) {
	for i := 0; i < len(rows); {
		j := i
		for j < len(rows) && rows[j].Query == rows[i].Query {
			j++
		}
		for k := i; k < j; k++ {
			e := rows[k]
			line := fmt.Sprintf("%s%s %s", indent, e.Signal, formatValue(e.Value, e.Unit))
			if e.Compare != "" && e.Threshold != nil {
				line += fmt.Sprintf("  (condition: %s %s)", e.Compare, formatValue(e.Threshold, e.Unit))
			} else if e.Compare != "" && k+1 < len(rows) {
				line += "  " + e.Compare
			}
			if l := labelText(e.Labels, identityLabels); l != "" {
				line += "  " + l
			}
			p.f("%s\n", line)
		}
		if rows[i].Query != "" {
			p.f("%s  promql: %s\n", indent, strings.Join(strings.Fields(rows[i].Query), " "))
		}
		i = j
	}
}

func (p *printer) signals(rows []Evidence) {
	if len(rows) == 0 {
		return
	}
	var parts []string
	for _, e := range rows {
		s := e.Signal + " " + formatValue(e.Value, e.Unit)
		if l := labelText(e.Labels, identityLabels); l != "" {
			s += " " + l
		}
		parts = append(parts, s)
	}
	p.f("  now: %s\n", strings.Join(parts, " · "))
}

func (p *printer) checks(cs []CheckResult) {
	by := map[CheckStatus][]string{}
	for _, c := range cs {
		by[c.Result] = append(by[c.Result], strings.TrimPrefix(c.Alert, "Loopwatch"))
	}
	var parts []string
	for _, s := range []CheckStatus{CheckOK, CheckHolds, CheckNoData, CheckNotApplicable, CheckDisabled} {
		if len(by[s]) == 0 {
			continue
		}
		if s == CheckOK {
			parts = append(parts, fmt.Sprintf("%d ok", len(by[s])))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s: %s", s, strings.Join(by[s], ", ")))
	}
	p.f("  checks: %s\n", strings.Join(parts, "; "))
	for _, c := range cs {
		if c.Result == CheckNoData {
			p.f("    %s: %s\n", c.Alert, c.Detail)
		}
	}
}

// labelText renders labels as {a="b", ...}, without those in skip.
func labelText(l map[string]string, skip map[string]bool) string {
	var keys []string
	for k, v := range l {
		if !skip[k] && v != "" {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return ""
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%q", k, l[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// formatValue renders a value in its unit: 12.5%, 6.2s, 3.1/s, 1.4k.
func formatValue(v *float64, u Unit) string {
	if v == nil {
		return "(no data)"
	}
	x := *v
	switch u {
	case UnitRatio:
		return fmt.Sprintf("%.3g%%", x*100)
	case UnitSeconds:
		return humanDuration(x)
	case UnitPerSecond:
		return si(x) + "/s"
	}
	return si(x)
}

// si writes v with three significant digits and a k/M/G suffix.
func si(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e9:
		return fmt.Sprintf("%.3gG", v/1e9)
	case a >= 1e6:
		return fmt.Sprintf("%.3gM", v/1e6)
	case a >= 1e3:
		return fmt.Sprintf("%.3gk", v/1e3)
	}
	return fmt.Sprintf("%.3g", v)
}

// humanDuration writes seconds as 20ms, 6.2s, 4m30s or 2h5m.
func humanDuration(s float64) string {
	switch {
	case s == 0:
		return "0s"
	case s < 1:
		return fmt.Sprintf("%.3gms", s*1000)
	case s < 60:
		return fmt.Sprintf("%.3gs", s)
	}
	d := time.Duration(s * float64(time.Second)).Round(time.Second)
	if d >= time.Hour {
		d = d.Round(time.Minute)
	}
	return model.Duration(d).String()
}
