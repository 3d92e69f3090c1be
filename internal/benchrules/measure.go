package benchrules

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// evaluations are the evaluations of one group seen during a phase.
type evaluations struct {
	file, name string
	interval   time.Duration
	last       time.Time
	seen       int // every evaluation seen, warm-up included
	group      []float64
	starts     []time.Time          // start of each evaluation in group, the same order
	rules      map[string][]float64 // rule name -> evaluation times, in group order
	ruleOrder  []string
}

// sampler polls /api/v1/rules and records each group's evaluation time (and its rules') once per
// evaluation: when lastEvaluation changes. Prometheus sets evaluationTime before lastEvaluation,
// so a new lastEvaluation always comes with its own evaluation time.
type sampler struct {
	api    *apiClient
	file   string // only groups of this rule file count
	warmup int
	groups map[string]*evaluations
	order  []string
}

func newSampler(api *apiClient, file string, warmup int) *sampler {
	return &sampler{api: api, file: file, warmup: warmup, groups: map[string]*evaluations{}}
}

func (s *sampler) poll(ctx context.Context) error {
	groups, err := s.api.ruleGroups(ctx, false)
	if err != nil {
		return err
	}
	for _, g := range groups {
		if g.File != s.file {
			continue
		}
		e, ok := s.groups[g.Name]
		if !ok {
			e = &evaluations{file: g.File, name: g.Name, interval: time.Duration(g.Interval * float64(time.Second)), rules: map[string][]float64{}}
			for _, r := range g.Rules {
				name := strings.TrimSuffix(r.Name, copySuffix)
				if _, dup := e.rules[name]; !dup {
					e.ruleOrder = append(e.ruleOrder, name)
				}
				e.rules[name] = nil
			}
			s.groups[g.Name] = e
			s.order = append(s.order, g.Name)
		}
		if g.LastEvaluation.IsZero() || !g.LastEvaluation.After(e.last) {
			continue
		}
		e.last = g.LastEvaluation
		e.seen++
		if e.seen <= s.warmup {
			continue
		}
		e.group = append(e.group, g.EvaluationTime)
		e.starts = append(e.starts, g.LastEvaluation)
		// Several rules may share a name (an alert split by labels): sum them per evaluation.
		perRule := map[string]float64{}
		for _, r := range g.Rules {
			// A slower group's measured copy names its rules with copySuffix.
			perRule[strings.TrimSuffix(r.Name, copySuffix)] += r.EvaluationTime
		}
		for name, v := range perRule {
			e.rules[name] = append(e.rules[name], v)
		}
	}
	return nil
}

// measured counts the evaluations kept (after the warm-up) of a group, -1 when it was never seen.
func (s *sampler) measured(group string) int {
	e, ok := s.groups[group]
	if !ok {
		return -1
	}
	return len(e.group)
}

// selfMetrics are the values of Prometheus' own metrics the report uses.
type selfMetrics struct {
	failures, missed, iterations map[string]float64 // by rule_group
	lastDuration                 map[string]float64
	engineSamples, cpuSeconds    float64
	headSeries                   float64
}

func readSelfMetrics(families map[string]*dto.MetricFamily) selfMetrics {
	byGroup := func(name string) map[string]float64 {
		out := map[string]float64{}
		mf := families[name]
		if mf == nil {
			return out
		}
		for _, m := range mf.GetMetric() {
			var key string
			for _, l := range m.GetLabel() {
				if l.GetName() == "rule_group" {
					key = l.GetValue()
				}
			}
			out[key] += metricValue(m)
		}
		return out
	}
	single := func(name string) float64 {
		mf := families[name]
		if mf == nil {
			return math.NaN()
		}
		var v float64
		for _, m := range mf.GetMetric() {
			v += metricValue(m)
		}
		return v
	}
	return selfMetrics{
		failures:      byGroup("prometheus_rule_evaluation_failures_total"),
		missed:        byGroup("prometheus_rule_group_iterations_missed_total"),
		iterations:    byGroup("prometheus_rule_group_iterations_total"),
		lastDuration:  byGroup("prometheus_rule_group_last_duration_seconds"),
		engineSamples: single("prometheus_engine_query_samples_total"),
		cpuSeconds:    single("process_cpu_seconds_total"),
		headSeries:    single("prometheus_tsdb_head_series"),
	}
}

func metricValue(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Untyped != nil:
		return m.GetUntyped().GetValue()
	}
	return 0
}

// cpuTimes are the machine's busy CPU time (all CPUs, from /proc/stat; 0 when unavailable) and
// this process' own, in seconds.
type cpuTimes struct{ machine, self float64 }

// userHZ is the unit of /proc/stat: USER_HZ, 100 on every Linux architecture Go supports.
const userHZ = 100

func readCPUTimes() cpuTimes {
	var c cpuTimes
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		c.self = float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
	}
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return c
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return c
	}
	// user nice system idle iowait irq softirq steal: busy is all but idle and iowait.
	for i, v := range f[1:9] {
		if i == 3 || i == 4 {
			continue
		}
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return c
		}
		c.machine += n / userHZ
	}
	return c
}

// loadAverage reads the 1-minute load average (0 when unavailable).
func loadAverage() float64 {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	var v float64
	if _, err := fmt.Sscan(strings.Fields(string(raw))[0], &v); err != nil {
		return 0
	}
	return v
}

// Quantiles of evaluation times, in seconds.
type Quantiles struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	Max float64 `json:"max"`
}

// MarshalJSON writes the quantiles of no evaluations (a slow group that did not run during a
// phase) as null: JSON has no NaN.
func (q Quantiles) MarshalJSON() ([]byte, error) {
	orNull := func(v float64) *float64 {
		if math.IsNaN(v) {
			return nil
		}
		return &v
	}
	return json.Marshal(struct {
		P50 *float64 `json:"p50"`
		P90 *float64 `json:"p90"`
		Max *float64 `json:"max"`
	}{orNull(q.P50), orNull(q.P90), orNull(q.Max)})
}

// quantiles uses the nearest-rank definition: p90 of 10 values is the 9th smallest.
func quantiles(v []float64) Quantiles {
	if len(v) == 0 {
		return Quantiles{P50: math.NaN(), P90: math.NaN(), Max: math.NaN()}
	}
	s := slices.Sorted(slices.Values(v))
	rank := func(p float64) float64 { return s[max(0, int(math.Ceil(p*float64(len(s))))-1)] }
	return Quantiles{P50: rank(0.5), P90: rank(0.9), Max: s[len(s)-1]}
}
