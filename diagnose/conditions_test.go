package diagnose

import (
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/loopwatch/loopwatch/gen"
)

func TestConditions(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	one, objective := 1.0, 0.99 // evaluated at run time, in float64, as PromQL does
	budget := func(rate float64) *float64 { return f(rate * (one - objective)) }
	for _, tc := range []struct {
		name, expr string
		want       []condition
	}{
		{
			name: "a signal against a constant",
			expr: `rate(x[5m]) > 0.1`,
			want: []condition{{signals: []string{`rate(x[5m])`}, op: ">", threshold: f(0.1)}},
		},
		{
			name: "a constant on the left is moved right with the operator mirrored",
			expr: `3 >= y`,
			want: []condition{{signals: []string{`y`}, op: "<=", threshold: f(3)}},
		},
		{
			name: "both sides of and, and a comparison between two signals",
			expr: "depth > 100\nand\nadds > completions",
			want: []condition{
				{signals: []string{`depth`}, op: ">", threshold: f(100)},
				{signals: []string{`adds`, `completions`}, op: ">"},
			},
		},
		{
			name: "arithmetic over constants is a threshold",
			expr: `(r5m > (14.4 * (1 - 0.99)) and r1h > (14.4 * (1 - 0.99))) or (r30m > (6 * (1 - 0.99)))`,
			want: []condition{
				{signals: []string{`r5m`}, op: ">", threshold: budget(14.4)},
				{signals: []string{`r1h`}, op: ">", threshold: budget(14.4)},
				{signals: []string{`r30m`}, op: ">", threshold: budget(6)},
			},
		},
		{
			name: "the right side of unless filters and is no condition",
			expr: `(a / (b > 0.1)) > 20 unless on (job) c > 5`,
			want: []condition{{signals: []string{`(a / (b > 0.1))`}, op: ">", threshold: f(20)}},
		},
		{
			name: "an expression without comparison has no condition",
			expr: `count by (job) (a) unless on (job) count by (job) (b)`,
		},
		{
			name: "a bool comparison is a value, not a condition",
			expr: `a > bool 1`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := conditions(tc.expr)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("conditions(%q) =\n%+v\nwant\n%+v", tc.expr, got, tc.want)
			}
		})
	}
}

// Every check names exactly the signals its alert's expression compares, for the default config
// and for every valid config of gen's fixtures: a change of an alert's expression that adds or
// removes a comparison fails here until the playbook names it.
func TestChecksNameTheSignalsOfTheirAlerts(t *testing.T) {
	cfgs := map[string]gen.Config{"default": gen.Default()}
	files, err := filepath.Glob("../gen/testdata/config/*.good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		cfg, err := gen.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		cfgs[filepath.Base(f)] = cfg
	}
	if len(cfgs) < 2 {
		t.Fatalf("no config fixtures found under ../gen/testdata/config")
	}
	for name, cfg := range cfgs {
		t.Run(name, func(t *testing.T) {
			d := planned(t, cfg, nil)
			for _, run := range d.runs {
				if run.disabled {
					continue
				}
				for _, sd := range run.signals {
					if _, err := promqlParser.ParseExpr(sd.query); err != nil {
						t.Errorf("%s: signal %q: %v", run.check.alert.FullName(), sd.spec.name, err)
					}
				}
				for _, sd := range run.extras {
					if _, err := promqlParser.ParseExpr(sd.query); err != nil {
						t.Errorf("%s: context %q: %v", run.check.alert.FullName(), sd.spec.name, err)
					}
				}
			}
		})
	}
}

// planned returns a diagnosis of cfg planned over a fixed window, with the recordings in missing
// inlined.
func planned(t testing.TB, cfg gen.Config, missing []string) *diagnosis {
	t.Helper()
	opts, err := Options{Prometheus: "http://prometheus.example:9090", Since: 10 * time.Minute, End: t0, Config: cfg}.complete()
	if err != nil {
		t.Fatal(err)
	}
	m, err := gen.Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := newPromClient(opts.Prometheus, time.Second, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	d := newDiagnosis(opts, m, c)
	d.inl = &inliner{missing: map[string]string{}, interval: time.Minute}
	groups, err := m.RuleGroups()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Record == "" {
				continue
			}
			if slices.Contains(missing, r.Record) {
				d.inl.missing[r.Record] = r.Expr
				d.inlined = append(d.inlined, r.Record)
			} else {
				d.recorded = append(d.recorded, r.Record)
			}
		}
	}
	if err := d.plan(); err != nil {
		t.Fatal(err)
	}
	return d
}
