package e2e_test

import (
	"context"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/loopwatch/loopwatch/gen"
	"github.com/loopwatch/loopwatch/internal/proc"
	"github.com/loopwatch/loopwatch/internal/stack"
)

// legacyController is e2e/legacycr: a controller built with controller-runtime v0.18, in a module
// of its own; TestMain removes it.
var legacyController = &proc.Binary{Package: "github.com/loopwatch/loopwatch/e2e/legacycr", ModuleDir: "legacycr"}

// TestWorkqueueControllerLabelOnRealScrapes: a controller built with controller-runtime v0.18,
// whose workqueue_* series carry the queue's name but no controller label, runs as a process, and
// the real Prometheus scrapes it as two jobs: as it is, and with the metric relabeling that
// LoopwatchWorkqueueControllerLabelMissing's runbook gives (read from the runbook, so the
// runbook's snippet is what is tested). The generated alert fires for the first job and not for
// the second; LoopwatchWorkqueueMetricsMissing, which said the series were missing before it
// looked them up by name, fires for neither; and the queue recording rules see the relabeled
// job's controller and not the other.
func TestWorkqueueControllerLabelOnRealScrapes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a controller of another controller-runtime version and starts Prometheus")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	const name = "legacy-probe"
	addr := startLegacy(ctx, t, name)

	const plain, relabeled = "legacy-plain", "legacy-relabeled"
	prom := stack.NewTestPrometheus(t, stack.PrometheusOptions{
		RuleFiles: []string{shortRules(t, gen.Default())},
		Targets: []stack.ScrapeTarget{
			{Job: plain, Addresses: []string{addr}},
			{Job: relabeled, Addresses: []string{addr}, MetricRelabelConfigs: runbookRelabeling(t, gen.WorkqueueControllerLabelMissing)},
		},
		OneEvaluationInterval: true,
	})

	alert := gen.WorkqueueControllerLabelMissing.FullName()
	a, err := prom.WaitForAlert(ctx, alert, map[string]string{"job": plain})
	if err != nil {
		t.Fatalf("%s for job %s: %v", alert, plain, err)
	}
	t.Logf("%s fires for job %s: %s", alert, plain, a.Annotations["description"])

	// The two jobs differ by the controller label on the workqueue series alone.
	wantJobs(ctx, t, prom, map[string][]string{ // want: the jobs, sorted
		`count by (job) (workqueue_adds_total{name="` + name + `", controller=""})`:                {plain},
		`count by (job) (workqueue_adds_total{name="` + name + `", controller="` + name + `"})`:    {relabeled},
		`count by (job) ({__name__=~".+:workqueue_.+", controller="` + name + `"})`:                {relabeled},
		`count by (job) (controller_runtime_max_concurrent_reconciles{controller="` + name + `"})`: {plain, relabeled},
	})

	alerts, err := prom.API().Alerts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range alerts.Alerts {
		switch n, job := string(a.Labels[model.AlertNameLabel]), string(a.Labels["job"]); {
		case n == alert && job == relabeled:
			t.Errorf("%s is %s for job %s, whose workqueue series carry the controller label", alert, a.State, job)
		case n == gen.WorkqueueMetricsMissing.FullName():
			t.Errorf("%s is %s for job %s, whose workqueue series exist", n, a.State, job)
		}
	}
}

// TestMaxConcurrentReconcilesKeptOnRealScrapes: the same controller, scraped by the real
// Prometheus as two jobs, each with a keep-list: one such as a team that charts reconciles and
// queues might write, which leaves controller_runtime_max_concurrent_reconciles out, and the one
// LoopwatchMaxConcurrentReconcilesMissing's runbook gives (read from the runbook). The alert fires
// for the first job, for its one controller, and not for the second. The first job shows the
// blind spot the alert names: LoopwatchWorkqueueControllerLabelMissing, which this controller's
// label-less queue series (controller-runtime v0.18) should fire, fires for the second job only.
func TestMaxConcurrentReconcilesKeptOnRealScrapes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a controller of another controller-runtime version and starts Prometheus")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	const name = "keeplist-probe"
	addr := startLegacy(ctx, t, name)

	const dropping, kept = "keeplist-dropping", "keeplist-runbook"
	prom := stack.NewTestPrometheus(t, stack.PrometheusOptions{
		RuleFiles: []string{shortRules(t, gen.Default())},
		Targets: []stack.ScrapeTarget{
			{Job: dropping, Addresses: []string{addr}, MetricRelabelConfigs: []map[string]any{{
				"source_labels": []string{"__name__"},
				"regex":         "(controller_runtime_reconcile_.+|controller_runtime_active_workers|workqueue_.+)",
				"action":        "keep",
			}}},
			{Job: kept, Addresses: []string{addr}, MetricRelabelConfigs: runbookRelabeling(t, gen.MaxConcurrentReconcilesMissing)},
		},
		OneEvaluationInterval: true,
	})

	alert, blind := gen.MaxConcurrentReconcilesMissing.FullName(), gen.WorkqueueControllerLabelMissing.FullName()
	a, err := prom.WaitForAlert(ctx, alert, map[string]string{"job": dropping})
	if err != nil {
		t.Fatalf("%s for job %s: %v", alert, dropping, err)
	}
	t.Logf("%s fires for job %s: %s", alert, dropping, a.Annotations["description"])
	if v, err := strconv.ParseFloat(a.Value, 64); err != nil || v != 1 {
		t.Errorf("%s for job %s has value %s, want 1 (one controller)", alert, dropping, a.Value)
	}
	if _, err := prom.WaitForAlert(ctx, blind, map[string]string{"job": kept}); err != nil {
		t.Fatalf("%s for job %s: %v", blind, kept, err)
	}

	// The premise: the jobs differ by the one series, and both keep the reconcile series.
	wantJobs(ctx, t, prom, map[string][]string{ // want: the jobs, sorted
		`count by (job) (controller_runtime_reconcile_total{controller="` + name + `", result="success"})`: {dropping, kept},
		`count by (job) (controller_runtime_max_concurrent_reconciles{controller="` + name + `"})`:         {kept},
	})

	alerts, err := prom.API().Alerts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range alerts.Alerts {
		switch n, job := string(a.Labels[model.AlertNameLabel]), string(a.Labels["job"]); {
		case n == alert && job == kept:
			t.Errorf("%s is %s for job %s, which keeps the series as the runbook says", alert, a.State, job)
		case n == blind && job == dropping:
			t.Errorf("%s is %s for job %s, which drops the series it looks controllers up by", n, a.State, job)
		}
	}
}

// wantJobs checks that the result of each query of want holds one series for each of its jobs
// (sorted) and for no other job.
func wantJobs(ctx context.Context, t *testing.T, prom *stack.Prometheus, want map[string][]string) {
	t.Helper()
	for query, jobs := range want {
		v, err := prom.Query(ctx, query)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range v {
			got = append(got, string(s.Metric["job"]))
		}
		if !slices.Equal(slices.Sorted(slices.Values(got)), jobs) {
			t.Errorf("%s: jobs %v, want %v", query, got, jobs)
		}
	}
}

// startLegacy runs the controller-runtime v0.18 controller as a process, its one controller named
// name, and returns the address of its metrics.
func startLegacy(ctx context.Context, t *testing.T, name string) string {
	t.Helper()
	bin, err := legacyController.Path()
	if err != nil {
		t.Fatal(err)
	}
	addr, err := stack.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	p, err := proc.Start(t.TempDir(), "legacycr", bin, nil, "--metrics-bind-address", addr, "--controller", name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	waitServing(ctx, t, "http://"+addr+"/metrics")
	return addr
}

// runbookRelabeling returns the metric_relabel_configs of the YAML block of a's runbook that holds
// them.
func runbookRelabeling(t *testing.T, a *gen.Alert) []map[string]any {
	t.Helper()
	b, err := os.ReadFile("../docs/runbooks/" + a.FullName() + ".md")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(b), -1) {
		if !strings.Contains(m[1], "metric_relabel_configs:") {
			continue
		}
		var c struct {
			MetricRelabelConfigs []map[string]any `json:"metric_relabel_configs"`
		}
		if err := yaml.Unmarshal([]byte(dedent(m[1])), &c); err != nil {
			t.Fatalf("runbook of %s: %v", a.FullName(), err)
		}
		if len(c.MetricRelabelConfigs) == 0 {
			t.Fatalf("runbook of %s: empty metric_relabel_configs", a.FullName())
		}
		return c.MetricRelabelConfigs
	}
	t.Fatalf("runbook of %s has no metric_relabel_configs block", a.FullName())
	return nil
}

// dedent removes the indentation that every non-empty line of s shares.
func dedent(s string) string {
	lines := strings.Split(s, "\n")
	indent := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if n := len(l) - len(strings.TrimLeft(l, " ")); indent < 0 || n < indent {
			indent = n
		}
	}
	for i, l := range lines {
		if len(l) >= indent && indent > 0 {
			lines[i] = l[indent:]
		}
	}
	return strings.Join(lines, "\n")
}

// waitServing waits until url answers 200.
func waitServing(ctx context.Context, t *testing.T, url string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return stack.HTTPOK(ctx, http.DefaultClient, url) == nil, nil
	})
	if err != nil {
		t.Fatalf("%s: %v", url, err)
	}
}
