package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/loopwatch/loopwatch/diagnose"
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

// legacyScene is one process of the v0.18 controller in TestLegacyControllerDiagnosis: its fault
// flags, the alert the fault must fire and the cause diagnose must name first (nil: healthy).
type legacyScene struct {
	name   string
	flags  []string
	expect *gen.Alert
}

// legacyConfigMaps is how many ConfigMaps the v0.18 controller's namespace holds: the N+1 fault
// makes one list and as many GETs per reconcile, over the alert's 20 calls.
const legacyConfigMaps = 22

// TestLegacyControllerDiagnosis: the controller-runtime v0.18 controller reconciles ConfigMaps of
// a real kube-apiserver, healthy and with each fault its series show (errors, slow reconciles,
// N+1 API calls), each process scraped as a job of its own by the real Prometheus with the
// generated rules. Each fault fires its alert, and `loopwatch diagnose` judges every controller
// from the data it has: the healthy one healthy (and an exit status of 0 for it alone), each
// faulty one unhealthy with its fault's alert first; for all of them the queue checks, which its
// workqueue series without a controller label cannot feed, are listed as not run, naming
// LoopwatchWorkqueueControllerLabelMissing, and that gap is listed as a gap, not a cause.
func TestLegacyControllerDiagnosis(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kube-apiserver, etcd and Prometheus, and builds a controller of another controller-runtime version")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	bin, err := legacyController.Path()
	if err != nil {
		t.Fatal(err)
	}
	cp := stack.NewTestControlPlane(t, stack.ControlPlaneOptions{})
	admin := kubernetes.NewForConfigOrDie(cp.AdminConfig())
	const namespace = "legacy"
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range legacyConfigMaps {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprint("object-", i)}, Data: map[string]string{"n": fmt.Sprint(i)}}
		if _, err := admin.CoreV1().ConfigMaps(namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "admin.kubeconfig")
	if err := writeAdminKubeconfig(kubeconfig, cp.AdminConfig()); err != nil {
		t.Fatal(err)
	}

	scenes := []legacyScene{
		{name: "healthy"},
		{name: "errors", flags: []string{"--fault-errors"}, expect: gen.ReconcileErrors},
		{name: "slow", flags: []string{"--fault-slow=6s"}, expect: gen.ReconcileSlow},
		{name: "n-plus-one", flags: []string{"--fault-n-plus-one"}, expect: gen.APICallsPerReconcileHigh},
	}
	var targets []stack.ScrapeTarget
	for _, sc := range scenes {
		addr, err := stack.FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		args := append([]string{"--metrics-bind-address", addr, "--controller", "legacy-" + sc.name, "--kubeconfig", kubeconfig,
			"--namespace", namespace, "--feed-interval", "2s"}, sc.flags...)
		p, err := proc.Start(dir, "legacycr-"+sc.name, bin, nil, args...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Stop)
		waitServing(ctx, t, "http://"+addr+"/metrics")
		targets = append(targets, stack.ScrapeTarget{Job: "legacy-" + sc.name, Addresses: []string{addr},
			Labels: map[string]string{"namespace": namespace, "pod": "legacy-" + sc.name + "-0"}})
	}
	cfg := gen.Default()
	cfg.RuleInterval = gen.Duration(2 * time.Second)
	cfg.Alerts.SetFor(20 * time.Second)
	prom := stack.NewTestPrometheus(t, stack.PrometheusOptions{RuleFiles: []string{shortRules(t, gen.Default())}, Targets: targets, OneEvaluationInterval: true})
	start := time.Now()

	gap := gen.WorkqueueControllerLabelMissing
	for _, sc := range scenes {
		job := map[string]string{"job": "legacy-" + sc.name}
		if _, err := prom.WaitForAlert(ctx, gap.FullName(), job); err != nil {
			t.Fatalf("%s for job %s: %v", gap.FullName(), job["job"], err)
		}
		if sc.expect == nil {
			continue
		}
		a, err := prom.WaitForAlert(ctx, sc.expect.FullName(), job)
		if err != nil {
			t.Fatalf("%s for job %s: %v", sc.expect.FullName(), job["job"], err)
		}
		t.Logf("%s fires for job %s %s after Prometheus started: %s", sc.expect.FullName(), job["job"], time.Since(start).Round(time.Second), a.Annotations["description"])
	}

	r, err := diagnose.Run(ctx, diagnose.Options{Prometheus: prom.URL(), Since: time.Since(start).Round(time.Second) + time.Second, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	queue := []*gen.Alert{gen.QueueBacklog, gen.QueueWaitHigh, gen.ProcessorStuck}
	for _, sc := range scenes {
		name := "legacy-" + sc.name
		c, ok := r.Find(namespace, name, name)
		if !ok {
			t.Errorf("%s: not in the report", name)
			continue
		}
		t.Logf("%s: %s: %s", name, c.Verdict, c.Headline)
		switch {
		case sc.expect == nil && c.Verdict != diagnose.Healthy:
			t.Errorf("%s: verdict %s (%s), want healthy", name, c.Verdict, c.Headline)
		case sc.expect != nil && (c.Verdict != diagnose.Unhealthy || c.FirstCause() != sc.expect.FullName() || c.Causes[0].Role != diagnose.RoleCause):
			t.Errorf("%s: verdict %s, first cause %q, want unhealthy with %s first", name, c.Verdict, c.FirstCause(), sc.expect.FullName())
		}
		for _, cause := range c.Causes {
			if sc.expect == nil && cause.Role != diagnose.RoleGap {
				t.Errorf("%s: healthy controller with the finding %s (%s)", name, cause.Alert, cause.Role)
			}
			if cause.Alert == gap.FullName() && cause.Role != diagnose.RoleGap {
				t.Errorf("%s: %s is a %s, want a gap", name, gap.FullName(), cause.Role)
			}
		}
		for _, a := range queue {
			i := slices.IndexFunc(c.Checks, func(x diagnose.CheckResult) bool { return x.Alert == a.FullName() })
			if i < 0 {
				t.Errorf("%s: no check %s", name, a.FullName())
			} else if x := c.Checks[i]; x.Result != diagnose.CheckNoData || !strings.Contains(x.Detail, gap.FullName()) {
				t.Errorf("%s: check %s is %s (%s), want no-data naming %s", name, a.FullName(), x.Result, x.Detail, gap.FullName())
			}
		}
		// Every other check has its data: reconciles, errors, latency, client requests.
		for _, x := range c.Checks {
			if x.Result == diagnose.CheckNoData && !slices.ContainsFunc(queue, func(a *gen.Alert) bool { return a.FullName() == x.Alert }) {
				t.Errorf("%s: check %s did not run (%s)", name, x.Alert, x.Detail)
			}
		}
	}
	// The healthy controller alone: what `loopwatch diagnose --controller legacy-healthy` exits 0 on.
	alone, err := diagnose.Run(ctx, diagnose.Options{Prometheus: prom.URL(), Since: time.Since(start).Round(time.Second) + time.Second, Config: cfg, Controller: "legacy-healthy"})
	if err != nil {
		t.Fatal(err)
	}
	if !alone.AllHealthy() {
		t.Errorf("diagnose --controller legacy-healthy is not all healthy (exit status 2): %+v", alone.Controllers)
	}
	if t.Failed() {
		t.Logf("diagnose:\n%s", text.String())
	}
}

// writeAdminKubeconfig writes cfg (client-certificate credentials) as a kubeconfig file.
func writeAdminKubeconfig(path string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["e2e"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["e2e"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "e2e"}
	kc.CurrentContext = "e2e"
	return clientcmd.WriteToFile(*kc, path)
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
