package detect_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/loopwatch/loopwatch/examples/controllers/conditions"
	configv1 "github.com/loopwatch/loopwatch/examples/controllers/conditions/api/v1"
	"github.com/loopwatch/loopwatch/gen"
	"github.com/loopwatch/loopwatch/internal/proc"
	"github.com/loopwatch/loopwatch/internal/stack"
)

// warmupObjects is how many AppConfigs the warming test's namespace holds at the start: more
// than LoopwatchQueueBacklog's default depth, so a standby's queue alone would be deep enough.
const warmupObjects = 150

// warmupWatch is how long the warming test watches the rules from Prometheus' start: the old
// queue rules' backlog condition held within a minute (`for` is 20s), so three minutes show both
// that it would hold and that the alerts stay silent.
const warmupWatch = 3 * time.Minute

// TestWarmingStandbyIsNotABacklog runs the conditions controller as two replicas with leader
// election and controller-runtime's EnableWarmup, on a real kube-apiserver, while new AppConfigs
// keep arriving. The standby starts its event sources and queue but no workers: its queue holds
// every AppConfig and never drains. The queue rules must count only the leader's queue, so that
// LoopwatchQueueBacklog and LoopwatchQueueWaitHigh stay silent, while the raw workqueue series,
// summed over the replicas as the rules did before, show a queue deeper than the threshold that
// grows faster than it is worked.
func TestWarmingStandbyIsNotABacklog(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real components for about 4 minutes")
	}
	ctrl.SetLogger(logr.Discard())
	bin, err := stack.LookPath("example-controller")
	if err != nil {
		t.Fatalf("%v (make binaries builds it)", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir := logDir(t, "loopwatch-warmup-")
	e := startEnv(t, dir)

	const namespace, job = "warmup", conditions.ControllerName + "-warm"
	pods := []string{job + "-0", job + "-1"}
	for _, pod := range pods {
		cfg, err := e.identity(ctx, namespace, job, pod)
		if err != nil {
			t.Fatal(err)
		}
		if err := stack.WriteKubeconfig(filepath.Join(dir, pod+".kubeconfig"), cfg); err != nil {
			t.Fatal(err)
		}
	}
	if err := appConfigs(ctx, e.kube, namespace, warmupObjects, configMapsPerNamespace); err != nil {
		t.Fatal(err)
	}

	// The first replica wins the election before the second starts: controller-runtime starts a
	// controller, and sets controller_runtime_max_concurrent_reconciles, on the leader only.
	started := `controller_runtime_max_concurrent_reconciles{controller="` + conditions.ControllerName + `"}`
	queued := `workqueue_depth{controller="` + conditions.ControllerName + `"`
	var targets []stack.ScrapeTarget
	for i, pod := range pods {
		p, addr, err := startReplica(dir, bin, namespace, pod)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Stop()
		want := started
		if i > 0 {
			want = queued
		}
		text, err := waitExposes(ctx, p, addr, want)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && strings.Contains(text, started) {
			t.Fatalf("%s, started as a standby, runs the controller: %s is set", pod, started)
		}
		targets = append(targets, stack.ScrapeTarget{Job: job, Addresses: []string{addr},
			Labels: map[string]string{"namespace": namespace, "pod": pod}})
	}
	e.startPrometheus(t, rulesConfig([]string{job}), targets)

	// New AppConfigs keep arriving: each is a new item in both replicas' queues, and only the
	// leader works it.
	wctx, stopWorkload := context.WithCancel(ctx)
	defer stopWorkload()
	go func() {
		for i := 0; wctx.Err() == nil; i++ {
			a := &configv1.AppConfig{
				ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("new-%03d", i)},
				Spec:       configv1.AppConfigSpec{ConfigMapName: "settings-0", RequiredKeys: []string{"endpoint"}},
			}
			if err := e.kube.Create(wctx, a); err != nil && wctx.Err() == nil {
				t.Logf("create AppConfig: %v", err)
			}
			select {
			case <-wctx.Done():
			case <-time.After(2 * time.Second):
			}
		}
	}()

	sel := `{job="` + job + `", controller!=""}`
	by := "sum by (namespace, job, controller) "
	oldBacklog := by + "(workqueue_depth" + sel + ") > 100 and " +
		by + "(rate(workqueue_adds_total" + sel + "[5m])) > " + by + "(rate(workqueue_work_duration_seconds_count" + sel + "[5m]))"
	recorded := `cluster_namespace_job_controller:workqueue_depth:sum{job="` + job + `"}`
	// The dashboard's depth panel, as Grafana would query it for this controller: the counted
	// queue by priority, then the warming standbys' queue.
	panel := panelExprs(t, e.generated, "dashboards/loopwatch-controller.json", "Queue depth by priority",
		strings.NewReplacer("$cluster", ".*", "$namespace", namespace, "$job", job, "$controller", conditions.ControllerName))
	if len(panel) != 2 {
		t.Fatalf("the dashboard's depth panel has %d queries, want 2 (the counted queue, the standbys'): %q", len(panel), panel)
	}
	var oldHeld, deepest, recordedMax, panelCountedMax, panelStandbyMax float64
	alerts := map[string]bool{}
	for end := time.Now().Add(warmupWatch); time.Now().Before(end); {
		v, err := e.prom.Query(ctx, `ALERTS{job="`+job+`"}`)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range v {
			alerts[describe(a.Metric)] = true
		}
		if v, err = e.prom.Query(ctx, oldBacklog); err != nil {
			t.Fatal(err)
		} else if len(v) > 0 {
			oldHeld++
		}
		deepest = max(deepest, sumOf(ctx, t, e.prom, by+"(workqueue_depth"+sel+")"))
		recordedMax = max(recordedMax, sumOf(ctx, t, e.prom, recorded))
		panelCountedMax = max(panelCountedMax, sumOf(ctx, t, e.prom, panel[0]))
		panelStandbyMax = max(panelStandbyMax, sumOf(ctx, t, e.prom, panel[1]))
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(2 * time.Second):
		}
	}
	stopWorkload()
	t.Logf("replicas' queues summed: deepest %.0f items; the old backlog condition held at %.0f of the polls; the recorded depth (leader only) at most %.0f; the dashboard's depth panel at most %.0f counted and %.0f on warming standbys",
		deepest, oldHeld, recordedMax, panelCountedMax, panelStandbyMax)

	// The premise: without the leader-only rule, this is a backlog by the alert's own terms.
	if deepest < warmupObjects {
		t.Errorf("the replicas' queues held at most %.0f items together, want at least %d (the standby's warmed queue)", deepest, warmupObjects)
	}
	if oldHeld == 0 {
		t.Errorf("the backlog condition summed over every replica never held: the standby's queue did not grow as expected")
	}
	// The rules: the leader's queue only, recorded, and nothing pending or firing.
	v, err := e.prom.Query(ctx, recorded)
	if err != nil {
		t.Fatal(err)
	}
	if len(v) == 0 {
		t.Errorf("%s recorded nothing: the leader's queue must be counted", recorded)
	}
	if recordedMax > 100 {
		t.Errorf("%s reached %.0f: the standby's queue is counted", recorded, recordedMax)
	}
	// The dashboard: the counted queue is the leader's, as the rules count it; the standby's
	// queue is shown apart.
	if panelCountedMax > 100 {
		t.Errorf("the dashboard's counted queue reached %.0f items: it counts the standby's queue (%s)", panelCountedMax, panel[0])
	}
	if panelStandbyMax < warmupObjects {
		t.Errorf("the dashboard's warming-standby queue held at most %.0f items, want at least %d (%s)", panelStandbyMax, warmupObjects, panel[1])
	}
	for a := range alerts {
		t.Errorf("alert on a healthy controller with a warming standby: %s", a)
	}
	if err := e.prom.RuleHealth(ctx); err != nil {
		t.Errorf("rules: %v", err)
	}
}

// startReplica runs one replica of the conditions controller as pod: leader election in its
// namespace, EnableWarmup, metrics on a loopback port.
func startReplica(dir, bin, namespace, pod string) (*proc.Process, string, error) {
	addr, err := stack.FreeAddr()
	if err != nil {
		return nil, "", err
	}
	p, err := proc.Start(dir, pod, bin, []string{"KUBECONFIG=" + filepath.Join(dir, pod+".kubeconfig")},
		"--controller="+conditions.ControllerName, "--metrics-secure=false", "--watch-namespace="+namespace,
		"--leader-elect", "--leader-election-namespace="+namespace, "--warmup",
		"--metrics-bind-address="+addr, "--health-probe-bind-address=0")
	return p, addr, err
}

// waitExposes waits until the process serves /metrics at addr with a line containing want, and
// returns the exposition.
func waitExposes(ctx context.Context, p *proc.Process, addr, want string) (string, error) {
	if err := waitMetrics(ctx, p, addr); err != nil {
		return "", err
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		text, err := scrapeText(ctx, addr)
		if err == nil && strings.Contains(text, want) {
			return text, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("%s exposes no %s after 90s (last error %v; log %s)", p.Name, want, err, p.Log)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func scrapeText(ctx context.Context, addr string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	return string(b), err
}

// panelExprs returns the queries of the panel titled title of the dashboard generated as path, with Grafana's variables
// replaced by vars and the rate interval by a minute.
func panelExprs(t *testing.T, files []gen.File, path, title string, vars *strings.Replacer) []string {
	t.Helper()
	var board []byte
	for _, f := range files {
		if f.Path == path {
			board = f.Content
		}
	}
	type panel struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
		Panels []panel `json:"panels"`
	}
	var d struct {
		Panels []panel `json:"panels"`
	}
	if err := json.Unmarshal(board, &d); err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	var out []string
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if p.Title == title {
				for _, tg := range p.Targets {
					out = append(out, strings.ReplaceAll(vars.Replace(tg.Expr), "$__rate_interval", "1m"))
				}
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	if len(out) == 0 {
		t.Fatalf("the dashboard has no panel %q", title)
	}
	return out
}

// sumOf is the sum of the values of query's result now.
func sumOf(ctx context.Context, t *testing.T, prom *stack.Prometheus, query string) float64 {
	t.Helper()
	v, err := prom.Query(ctx, query)
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, s := range v {
		sum += float64(s.Value)
	}
	return sum
}
