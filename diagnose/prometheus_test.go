package diagnose_test

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loopwatch/loopwatch/catalogue"
	"github.com/loopwatch/loopwatch/diagnose"
	"github.com/loopwatch/loopwatch/gen"
	"github.com/loopwatch/loopwatch/internal/browser"
	"github.com/loopwatch/loopwatch/internal/stack"
)

// A real Prometheus scrapes synthetic controllers, one workload per incident, and diagnose must
// name each incident's cause first, call the healthy controllers healthy, and say when it lacks
// data. The same targets are scraped by two Prometheus servers: one with loopwatch's generated
// rules loaded, one without, so the checks run once on the recorded series and once on the raw
// metrics.

const (
	fightActor = "system:serviceaccount:fight:fake-fight-operator"
	rivalActor = "system:serviceaccount:kube-system:tier-controller"
)

// scenario is one workload and what diagnose must conclude about each of its controllers.
type scenario struct {
	namespace, job string
	manager        fakeManager
	want           map[string]want // by controller name
	// stops: the process stops before the diagnosis (its target answers no more).
	stops bool
}

// want is the expected diagnosis of one controller.
type want struct {
	verdict diagnose.Verdict
	// first is the alert of the most likely cause (nil when healthy).
	first *gen.Alert
	// symptoms map an alert that must be listed as a symptom to the alert that explains it.
	symptoms map[*gen.Alert]*gen.Alert
	// actors must all be named by the first cause.
	actors []string
	// noData are checks that must report no-data.
	noData []*gen.Alert
	// gaps are the monitoring gaps that must be listed (role gap) after any failure.
	gaps []*gen.Alert
}

func one(v float64) *float64 { return &v }

func scenarios() []scenario {
	return []scenario{
		{
			namespace: "healthy", job: "fake-healthy-operator",
			manager: fakeManager{
				controllers: []fakeController{{name: "widget", success: 2, fast: 0.02, depth: 1, busy: 1, maxWorkers: 4, wait: 0.01}},
				requests:    map[string]float64{"GET": 3, "PATCH": 0.5},
				leader:      one(1),
			},
			want: map[string]want{"widget": {verdict: diagnose.Healthy}},
		},
		{
			namespace: "stuck", job: "fake-stuck-operator",
			manager: fakeManager{
				controllers: []fakeController{{name: "archive", success: 0.5, fast: 0.05, adds: 5, completions: 2, depth: 150, depthGrowth: 3,
					wait: 30, longestRunning: 700, stuck: true, busy: 1, maxWorkers: 1}},
				requests: map[string]float64{"GET": 1},
			},
			want: map[string]want{"archive": {verdict: diagnose.Unhealthy, first: gen.ProcessorStuck,
				symptoms: map[*gen.Alert]*gen.Alert{gen.QueueBacklog: gen.ProcessorStuck}}},
		},
		{
			namespace: "slow", job: "fake-slow-operator",
			manager: fakeManager{
				controllers: []fakeController{{name: "report", success: 1, fast: 0.1, slow: 6, slowShare: 0.5, busy: 1, maxWorkers: 4}},
				requests:    map[string]float64{"GET": 2},
			},
			want: map[string]want{"report": {verdict: diagnose.Unhealthy, first: gen.ReconcileSlow}},
		},
		{
			namespace: "errors", job: "fake-errors-operator",
			manager: fakeManager{
				controllers: []fakeController{{name: "sync", success: 1.2, errors: 0.8, fast: 0.03}},
				requests:    map[string]float64{"GET": 2, "PUT": 0.5},
			},
			want: map[string]want{"sync": {verdict: diagnose.Unhealthy, first: gen.ReconcileErrors,
				symptoms: map[*gen.Alert]*gen.Alert{gen.ErrorBudgetBurnFast: gen.ReconcileErrors}}},
		},
		{
			// Five of six reconciles return RequeueAfter: the retries counter climbs as fast as in
			// an error storm, and nothing is wrong.
			namespace: "requeue", job: "fake-requeue-operator",
			manager: fakeManager{
				controllers: []fakeController{{name: "schedule", success: 1, requeueAfter: 5, fast: 0.02}},
				requests:    map[string]float64{"GET": 2, "PATCH": 0.5},
			},
			want: map[string]want{"schedule": {verdict: diagnose.Healthy}},
		},
		{
			namespace: "nplusone", job: "fake-nplusone-operator",
			manager: fakeManager{
				controllers: []fakeController{{name: "backup", success: 1, fast: 0.2, slow: 6, slowShare: 0.3,
					calls: map[string]float64{"list": 1, "get": 50, "patch": 0.2}}},
				requests: map[string]float64{"GET": 51, "PATCH": 0.2},
			},
			want: map[string]want{"backup": {verdict: diagnose.Unhealthy, first: gen.APICallsPerReconcileHigh,
				symptoms: map[*gen.Alert]*gen.Alert{gen.ReconcileSlow: gen.APICallsPerReconcileHigh}}},
		},
		{
			// The widget controller fights another actor over one Widget, and its process patches
			// fast; the gadget controller of the same process is fine.
			namespace: "fight", job: "fake-fight-operator",
			manager: fakeManager{
				controllers: []fakeController{
					{name: "widget", success: 3, fast: 0.05},
					{name: "gadget", success: 0.3, fast: 0.05},
				},
				requests: map[string]float64{"GET": 2, "PATCH": 12},
			},
			want: map[string]want{
				"widget": {verdict: diagnose.Unhealthy, first: gen.WriteFight, actors: []string{fightActor, rivalActor},
					symptoms: map[*gen.Alert]*gen.Alert{gen.PatchRateHigh: gen.WriteFight}},
				"gadget": {verdict: diagnose.Healthy},
			},
		},
		{
			// A healthy process that stops (crashes, is scaled to zero) just before the
			// diagnosis: every check would pass on its data, none of which is recent.
			namespace: "stopped", job: "fake-stopped-operator", stops: true,
			manager: fakeManager{
				controllers: []fakeController{{name: "gizmo", success: 2, fast: 0.02, depth: 1, busy: 1, maxWorkers: 4, wait: 0.01}},
				requests:    map[string]float64{"GET": 2, "PATCH": 0.2},
				leader:      one(1),
			},
			want: map[string]want{"gizmo": {verdict: diagnose.InsufficientData}},
		},
		{
			// The workqueue metrics provider race: reconcile metrics but no workqueue_* at all.
			// Healthy from what it has: the queue checks cannot run, and the gap says why.
			namespace: "noqueue", job: "fake-noqueue-operator",
			manager: fakeManager{
				controllers: []fakeController{{name: "legacy", success: 1, fast: 0.02, noWorkqueue: true}},
				requests:    map[string]float64{"GET": 1},
			},
			want: map[string]want{"legacy": {verdict: diagnose.Healthy, gaps: []*gen.Alert{gen.WorkqueueMetricsMissing},
				noData: []*gen.Alert{gen.QueueBacklog, gen.QueueWaitHigh, gen.ProcessorStuck}}},
		},
		{
			// controller-runtime v0.18: queue series without the controller label. Every other
			// check runs: healthy, with the queue checks listed as not run.
			namespace: "cr018", job: "fake-cr018-operator",
			manager: fakeManager{
				controllers: []fakeController{{name: "probe", success: 2, fast: 0.02, unlabeledQueue: true, depth: 1, busy: 1, wait: 0.01}},
				requests:    map[string]float64{"GET": 2, "PATCH": 0.2},
			},
			want: map[string]want{"probe": {verdict: diagnose.Healthy, gaps: []*gen.Alert{gen.WorkqueueControllerLabelMissing},
				noData: []*gen.Alert{gen.QueueBacklog, gen.QueueWaitHigh, gen.ProcessorStuck}}},
		},
		{
			// The same controller failing: the error checks run on its data and name the cause.
			namespace: "cr018-errors", job: "fake-cr018-errors-operator",
			manager: fakeManager{
				controllers: []fakeController{{name: "probe", success: 1.2, errors: 0.8, fast: 0.02, unlabeledQueue: true}},
				requests:    map[string]float64{"GET": 2},
			},
			want: map[string]want{"probe": {verdict: diagnose.Unhealthy, first: gen.ReconcileErrors,
				gaps:   []*gen.Alert{gen.WorkqueueControllerLabelMissing},
				noData: []*gen.Alert{gen.QueueBacklog, gen.QueueWaitHigh, gen.ProcessorStuck}}},
		},
	}
}

// testConfig is the default config with a 1s rule interval, so recording rules have values
// within seconds.
func testConfig() gen.Config {
	cfg := gen.Default()
	cfg.RuleInterval = gen.Duration(time.Second)
	return cfg
}

func TestDiagnoseOnPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping in -short mode: starts Prometheus")
	}
	cfg := testConfig()
	var (
		targets []stack.ScrapeTarget
		history strings.Builder
	)
	add := func(job string, labels map[string]string, render func(float64) *exposition) *fakeTarget {
		f := serveMetrics(render)
		t.Cleanup(f.srv.Close)
		host := hostOf(t, f.srv.URL)
		targets = append(targets, stack.ScrapeTarget{Job: job, Addresses: []string{host}, Labels: labels})
		f.backfill(&history, with(labels, "job", job, "instance", host))
		return f
	}
	var stopping []*fakeTarget
	for _, sc := range scenarios() {
		f := add(sc.job, map[string]string{"namespace": sc.namespace, "pod": sc.job + "-0"}, sc.manager.metrics)
		if sc.stops {
			stopping = append(stopping, f)
		}
	}
	add("loopwatch-exporter", map[string]string{"namespace": "loopwatch", "pod": "loopwatch-exporter-0"}, fakeExporter{offenders: []fakeOffender{{
		metric: catalogue.AuditFightHandoffs, value: 6,
		labels: map[string]string{"group": "example.dev", "resource": "widgets", "object_namespace": "fight", "object_name": "w-1",
			"actor_a": fightActor, "actor_b": rivalActor},
	}}}.metrics)
	history.WriteString("# EOF\n")
	backfill := filepath.Join(t.TempDir(), "history.om")
	if err := os.WriteFile(backfill, []byte(history.String()), 0o600); err != nil {
		t.Fatal(err)
	}

	rulesFile := writeRules(t, cfg)
	withRules := stack.NewTestPrometheus(t, stack.PrometheusOptions{RuleFiles: []string{rulesFile}, OneEvaluationInterval: true, Targets: targets, Backfill: []string{backfill}})
	raw := stack.NewTestPrometheus(t, stack.PrometheusOptions{Targets: targets, Backfill: []string{backfill}})

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, p := range []*stack.Prometheus{withRules, raw} {
		if err := p.WaitForTargetsUp(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := withRules.WaitForRuleEvaluations(ctx, 3); err != nil {
		t.Fatal(err)
	}
	for _, f := range stopping {
		f.srv.Close()
	}
	// The next scrape of a stopped target fails, and Prometheus marks its series stale.
	for _, p := range []*stack.Prometheus{withRules, raw} {
		waitForQuery(ctx, t, p, `up{namespace="stopped"} == 0`)
	}
	time.Sleep(2 * time.Second) // diagnose ends its window at a whole second: past the stale markers

	for _, tc := range []struct {
		name         string
		prom         *stack.Prometheus
		wantRecorded bool
	}{
		{"on the recorded series of the generated rules", withRules, true},
		{"on the raw metrics", raw, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			began := time.Now()
			r, err := diagnose.Run(ctx, diagnose.Options{Prometheus: tc.prom.URL(), Since: 2 * time.Minute, Config: cfg})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("diagnosed %d controllers in %s", len(r.Controllers), time.Since(began).Round(time.Millisecond))
			if got := len(r.RecordingRules.Recorded) > 0; got != tc.wantRecorded {
				t.Errorf("recorded rules %v, want some: %v", r.RecordingRules.Recorded, tc.wantRecorded)
			}
			if !tc.wantRecorded && len(r.RecordingRules.Inlined) == 0 {
				t.Errorf("no recording rule inlined on a Prometheus without rules")
			}
			checkScenarios(t, r)
			if t.Failed() {
				var b strings.Builder
				_ = r.WriteText(&b)
				t.Logf("report:\n%s", b.String())
			}
		})
	}

	t.Run("one controller by name", func(t *testing.T) {
		r, err := diagnose.Run(ctx, diagnose.Options{Prometheus: raw.URL(), Since: 2 * time.Minute, Config: cfg, Controller: "widget"})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range r.Controllers {
			got = append(got, c.Namespace+"/"+c.Name)
		}
		if want := []string{"fight/widget", "healthy/widget"}; !slices.Equal(got, want) {
			t.Errorf("controllers %v, want %v", got, want)
		}
	})

	t.Run("an unknown controller is an error naming the known ones", func(t *testing.T) {
		_, err := diagnose.Run(ctx, diagnose.Options{Prometheus: raw.URL(), Since: 2 * time.Minute, Config: cfg, Controller: "nosuch"})
		if !errors.Is(err, diagnose.ErrUnknownController) || !strings.Contains(err.Error(), "archive") {
			t.Errorf("error %v, want ErrUnknownController listing the controllers found", err)
		}
	})

	t.Run("the HTML report charts each finding's evidence from range queries", func(t *testing.T) {
		opts := diagnose.Options{Prometheus: raw.URL(), Since: 2 * time.Minute, Config: cfg}
		r, err := diagnose.Run(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		charts, err := diagnose.FetchCharts(ctx, opts, r)
		if err != nil {
			t.Fatal(err)
		}
		if len(charts.Skipped) > 0 {
			t.Errorf("evidence queries not charted: %v", charts.Skipped)
		}
		var page strings.Builder
		if err := r.WriteHTML(&page, charts); err != nil {
			t.Fatal(err)
		}
		doc, err := browser.ParseDOM(page.String())
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range r.Controllers {
			for _, cause := range c.Causes {
				withData := slices.ContainsFunc(cause.Evidence, func(e diagnose.Evidence) bool { return e.Value != nil && e.Query != "" })
				secs := doc.All(func(n browser.Node) bool { return n.Tag() == "section" && n.Attr("data-alert") == cause.Alert })
				lines := 0
				for _, s := range secs {
					for _, p := range s.All(func(n browser.Node) bool { return n.Tag() == "path" && n.Has("data-points") }) {
						if p.Attr("data-points") != "0" {
							lines++
						}
					}
				}
				if withData && lines == 0 {
					t.Errorf("%s/%s: %s has evidence but no chart line with points", c.Namespace, c.Name, cause.Alert)
				}
			}
		}
		for _, l := range regexp.MustCompile(`https?://[^"<\s]*`).FindAllString(page.String(), -1) {
			if !strings.Contains(l, "/docs/runbooks/") {
				t.Errorf("the page refers to %s, no runbook", l)
			}
		}
		if page.Len() > 5e6 {
			t.Errorf("the page is %d bytes", page.Len())
		}
	})

	t.Run("an answer over the size bound is an error", func(t *testing.T) {
		_, err := diagnose.Run(ctx, diagnose.Options{Prometheus: raw.URL(), Since: 2 * time.Minute, Config: cfg, MaxResponseBytes: 2000})
		if !errors.Is(err, diagnose.ErrResponseTooLarge) {
			t.Errorf("error %v, want ErrResponseTooLarge", err)
		}
	})

	t.Run("a selector matching no controller is an error saying which metric is missing", func(t *testing.T) {
		c := testConfig()
		c.Selectors.Controller = `job="no-such-job"`
		_, err := diagnose.Run(ctx, diagnose.Options{Prometheus: raw.URL(), Since: 2 * time.Minute, Config: c})
		if !errors.Is(err, diagnose.ErrNoControllers) || !strings.Contains(err.Error(), catalogue.ControllerRuntimeReconcileTotal.Name) {
			t.Errorf("error %v, want ErrNoControllers naming %s", err, catalogue.ControllerRuntimeReconcileTotal.Name)
		}
	})
}

// checkScenarios compares the report with every scenario's expectations.
// waitForQuery polls Prometheus until query has a result.
func waitForQuery(ctx context.Context, t *testing.T, p *stack.Prometheus, query string) {
	t.Helper()
	for {
		v, _, err := p.API().Query(ctx, query, time.Now())
		if err == nil && v.String() != "" {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: no result on %s: %v", query, p.URL(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func checkScenarios(t *testing.T, r diagnose.Report) {
	t.Helper()
	found := map[string]diagnose.Controller{}
	for _, c := range r.Controllers {
		found[c.Namespace+"/"+c.Job+"/"+c.Name] = c
	}
	for _, sc := range scenarios() {
		for name, w := range sc.want {
			key := sc.namespace + "/" + sc.job + "/" + name
			c, ok := found[key]
			if !ok {
				t.Errorf("%s: not in the report", key)
				continue
			}
			if c.Verdict != w.verdict {
				t.Errorf("%s: verdict %s (%s), want %s", key, c.Verdict, c.Headline, w.verdict)
			}
			for _, g := range w.gaps {
				i := slices.IndexFunc(c.Causes, func(x diagnose.Cause) bool { return x.Alert == g.FullName() })
				if i < 0 || c.Causes[i].Role != diagnose.RoleGap {
					t.Errorf("%s: causes %v, want the gap %s", key, alerts(c.Causes), g.FullName())
				}
			}
			failures := slices.DeleteFunc(slices.Clone(c.Causes), func(x diagnose.Cause) bool { return x.Role == diagnose.RoleGap })
			switch {
			case w.first == nil:
				if len(failures) > 0 {
					t.Errorf("%s: causes %v, want no failure", key, alerts(c.Causes))
				}
				if len(c.Causes) > len(w.gaps) {
					t.Errorf("%s: causes %v, want only the gaps %v", key, alerts(c.Causes), w.gaps)
				}
			case len(c.Causes) == 0 || c.Causes[0].Alert != w.first.FullName() || c.Causes[0].Role != diagnose.RoleCause:
				t.Errorf("%s: causes %v, want %s first", key, alerts(c.Causes), w.first.FullName())
			default:
				first := c.Causes[0]
				if first.Status != diagnose.StatusActive || len(first.Evidence) == 0 || first.Query == "" || first.Runbook == "" || first.NextStep == "" {
					t.Errorf("%s: first cause %+v lacks status, evidence, query, runbook or next step", key, first)
				}
				for _, a := range w.actors {
					if !slices.Contains(first.Actors, a) || !strings.Contains(first.Description, a) {
						t.Errorf("%s: first cause names actors %v in %q, want %s", key, first.Actors, first.Description, a)
					}
				}
			}
			for symptom, by := range w.symptoms {
				i := slices.IndexFunc(c.Causes, func(x diagnose.Cause) bool { return x.Alert == symptom.FullName() })
				if i < 0 || c.Causes[i].Role != diagnose.RoleSymptom || c.Causes[i].ExplainedBy != by.FullName() {
					t.Errorf("%s: causes %v, want %s as a symptom of %s", key, alerts(c.Causes), symptom.FullName(), by.FullName())
				}
			}
			for _, a := range w.noData {
				i := slices.IndexFunc(c.Checks, func(x diagnose.CheckResult) bool { return x.Alert == a.FullName() })
				if i < 0 || c.Checks[i].Result != diagnose.CheckNoData {
					t.Errorf("%s: check %s is not no-data: %v", key, a.FullName(), c.Checks)
				} else if len(w.gaps) > 0 && !strings.Contains(c.Checks[i].Detail, w.gaps[0].FullName()) {
					t.Errorf("%s: check %s cannot run for %q, want the gap %s named", key, a.FullName(), c.Checks[i].Detail, w.gaps[0].FullName())
				}
			}
			if w.verdict == diagnose.Healthy && len(c.Signals) == 0 {
				t.Errorf("%s: healthy without signals", key)
			}
		}
	}
}

// alerts lists causes as "Alert(role)".
func alerts(cs []diagnose.Cause) []string {
	var out []string
	for _, c := range cs {
		s := c.Alert + "(" + string(c.Role)
		if c.ExplainedBy != "" {
			s += " of " + c.ExplainedBy
		}
		out = append(out, s+")")
	}
	return out
}

func hostOf(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// writeRules generates loopwatch's rule file for cfg into a temporary directory.
func writeRules(t *testing.T, cfg gen.Config) string {
	t.Helper()
	m, err := gen.Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	files, err := m.Files()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, f := range files {
		if f.Path == gen.RulesFile {
			path := filepath.Join(dir, "rules.yaml")
			if err := os.WriteFile(path, f.Content, 0o600); err != nil {
				t.Fatal(err)
			}
			return path
		}
	}
	t.Fatalf("no %s among the generated files", gen.RulesFile)
	return ""
}
