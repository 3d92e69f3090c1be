package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/loopwatch/loopwatch/gen"
	"github.com/loopwatch/loopwatch/internal/stack"
)

const (
	// workloadNamespace holds the test controller, its ConfigMaps and its leader-election lease.
	workloadNamespace = "mirror"
	// scrapeJob is the job label of the test controller's metrics.
	scrapeJob = "mirror-controller"
	// apiserverJob is the job label the generated rules select kube-apiserver's metrics by.
	apiserverJob = "apiserver"
)

// targetLabels are the labels Kubernetes service discovery would attach to the controller's
// series; the generated rules aggregate by cluster, namespace, job and pod.
var targetLabels = map[string]string{"cluster": "e2e", "namespace": workloadNamespace, "pod": "mirror-controller-0"}

// noDataInHealthyRun lists the dashboard queries that legitimately return nothing while the test
// controller runs healthily, each with the reason. A listed query that does return data fails
// the test, so the list cannot go stale. Keys are "<dashboard file>/<panel title>/<refId>", the
// query's 1-based position standing in for a missing refId.
var noDataInHealthyRun = map[string]string{
	"loopwatch-exporter.json/API server audit errors/A":               "kube-apiserver creates apiserver_audit_error_total only when an audit backend fails; the exporter here never does",
	"loopwatch-apf.json/Rejected requests by controller and reason/A": "API Priority and Fairness rejects nothing at this load (TestAPFFlowSchemasOnRealAPIServer provokes rejections)",
	"loopwatch-controller.json/Queue depth by priority/B":             "a warming standby's queue: the test controller runs one replica, without EnableWarmup (TestWarmingStandbyIsNotABacklog in examples/controllers/detect runs one)",
}

// recordingRulesWithoutSeries lists recording rules that legitimately yield nothing in this setup,
// keyed by record name, with the reason.
var recordingRulesWithoutSeries = map[string]string{
	"cluster_priority_level_flow_schema_reason:apiserver_flowcontrol_rejected_requests:rate5m": "API Priority and Fairness rejects nothing at this load (TestAPFFlowSchemasOnRealAPIServer provokes rejections)",
}

// TestGeneratedOutputsOnRealComponents puts rules/ and dashboards/ in front of their real
// consumers: kube-apiserver with the prometheus-operator CRDs for the PrometheusRule manifests,
// and Prometheus for the rules and dashboard queries, scraping a real controller-runtime manager,
// loopwatch's audit exporter (fed by that kube-apiserver's audit webhook) and kube-apiserver.
func TestGeneratedOutputsOnRealComponents(t *testing.T) {
	stack.SkipShort(t)
	ruleFiles, manifests := generatedYAML(t)
	boards := dashboards(t)
	crds, err := stack.PrometheusOperatorCRDDir()
	if err != nil && testing.Short() {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	webhook, exporterAddr, exporterToken := startExporter(t)
	cp := stack.NewTestControlPlane(t, stack.ControlPlaneOptions{
		CRDDirectories: []string{crds},
		AuditWebhook:   webhook,
		AuditPolicy:    exporterAuditPolicy(t),
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	t.Run("PrometheusRule manifests are accepted by the CRD schema", func(t *testing.T) {
		for path, data := range manifests {
			t.Run(filepath.Base(path), func(t *testing.T) { createManifest(ctx, t, cp, data) })
		}
	})

	t.Run("the controller's generated FlowSchema is accepted", func(t *testing.T) {
		// The controller gets its own FlowSchema, as a user naming it in apf.controllers would
		// apply it, so the APF rules and dashboard have a controller to show.
		cfg := gen.Default()
		cfg.APF.Controllers = []gen.APFController{{Name: scrapeJob, ServiceAccount: workloadNamespace + "/mirror-controller"}}
		applyFlowSchemas(ctx, t, kubernetes.NewForConfigOrDie(cp.AdminConfig()), generate(t, cfg)[gen.FlowSchemasFile])
	})

	mgr := startManager(t, cp, workloadNamespace)
	workloadCtx, stopWorkload := context.WithCancel(ctx)
	t.Cleanup(stopWorkload)
	runWorkload(workloadCtx, t, cp, workloadNamespace)
	apiserver, err := cp.ScrapeTarget(apiserverJob)
	if err != nil {
		t.Fatal(err)
	}
	apiserver.Labels = map[string]string{"cluster": targetLabels["cluster"]}

	var paths []string
	for path := range ruleFiles {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	prom := stack.NewTestPrometheus(t, stack.PrometheusOptions{
		RuleFiles: paths, OneEvaluationInterval: true,
		Targets: []stack.ScrapeTarget{
			{Job: scrapeJob, Addresses: []string{mgr.metricsAddr}, Labels: targetLabels},
			{
				Job: exporterJob, Addresses: []string{exporterAddr}, Scheme: "https", TLS: &stack.TLSFiles{InsecureSkipVerify: true},
				BearerTokenFile: exporterToken,
				Labels:          map[string]string{"cluster": targetLabels["cluster"], "namespace": "loopwatch", "pod": "loopwatch-exporter-0"},
			},
			apiserver,
		},
	})
	if err := prom.WaitForTargetsUp(ctx); err != nil {
		t.Fatal(err)
	}
	// Rates over the dashboards' 1m window and the rules' 5m windows need a few scrapes of a busy
	// controller: wait for reconciles of every result the controller produces.
	warmup, cancelWarmup := context.WithTimeout(ctx, 2*time.Minute)
	defer cancelWarmup()
	for _, result := range []string{"success", "error", "requeue_after"} {
		q := fmt.Sprintf(`increase(controller_runtime_reconcile_total{job=%q, result=%q}[1m]) > 0`, scrapeJob, result)
		if _, err := prom.WaitForQuery(warmup, q); err != nil {
			now, _ := prom.Query(ctx, fmt.Sprintf(`controller_runtime_reconcile_total{job=%q}`, scrapeJob))
			t.Fatalf("the test controller does not reconcile as intended: %v (reconcile_total now: %v)", err, now)
		}
	}
	if _, err := prom.WaitForQuery(warmup, fmt.Sprintf(`increase(loopwatch_audit_writes_total{job=%q}[1m]) > 0`, exporterJob)); err != nil {
		t.Fatalf("the exporter receives no audit events from kube-apiserver: %v", err)
	}
	if err := prom.WaitForRuleEvaluations(warmup, 5); err != nil {
		t.Fatal(err)
	}

	t.Run("every rule group evaluates without failures", func(t *testing.T) {
		if err := prom.RuleHealth(ctx); err != nil {
			t.Error(err)
		}
		groups, err := prom.RuleGroups(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		for _, rf := range ruleFiles {
			want += len(rf.Groups)
		}
		if len(groups) != want {
			t.Errorf("prometheus loaded %d rule groups, rules/ holds %d", len(groups), want)
		}
	})

	t.Run("every recording rule yields series", func(t *testing.T) {
		for _, rf := range ruleFiles {
			for _, g := range rf.Groups {
				for _, r := range g.Rules {
					if r.Record == "" {
						continue
					}
					reason := recordingRulesWithoutSeries[r.Record]
					if back := longestOffset(t, r.Expr); back >= time.Hour {
						// The SLO rules' past day sums read the day sum of one and two days ago:
						// a run minutes long has none (their promtool tests run over days).
						reason = fmt.Sprintf("reads its input %s back, further back than this run", back)
					}
					t.Run(r.Record, func(t *testing.T) {
						expectData(ctx, t, prom, r.Record, reason)
						if err := mgr.stopped(); err != nil {
							t.Fatal(err)
						}
					})
				}
			}
		}
	})

	t.Run("every dashboard query returns data", func(t *testing.T) {
		for file, d := range boards {
			values, err := resolveVariables(ctx, prom, d.Templating.List)
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			for _, q := range d.queries(file) {
				t.Run(q.String(), func(t *testing.T) {
					expr, err := substitute(q.Expr, d.Templating.List, values)
					if err != nil {
						t.Fatal(err)
					}
					expectData(ctx, t, prom, expr, noDataInHealthyRun[q.String()])
					if err := mgr.stopped(); err != nil {
						t.Fatal(err)
					}
				})
			}
		}
	})

	t.Run("stale allow-list entries", func(t *testing.T) {
		known := map[string]bool{}
		for file, d := range boards {
			for _, q := range d.queries(file) {
				known[q.String()] = true
			}
		}
		for key := range noDataInHealthyRun {
			if !known[key] {
				t.Errorf("noDataInHealthyRun lists %q, which no dashboard has any more", key)
			}
		}
		records := map[string]bool{}
		for _, rf := range ruleFiles {
			for _, g := range rf.Groups {
				for _, r := range g.Rules {
					records[r.Record] = true
				}
			}
		}
		for name := range recordingRulesWithoutSeries {
			if !records[name] {
				t.Errorf("recordingRulesWithoutSeries lists %q, which no rule records any more", name)
			}
		}
	})

	t.Run("the generated alerts catch the staged incidents", func(t *testing.T) {
		alerts := alertNames(ruleFiles)
		for _, inc := range stagedIncidents {
			t.Run(inc.name, func(t *testing.T) {
				if !alerts[inc.alert] {
					t.Fatalf("rules/ has no alert %s any more: update stagedIncidents", inc.alert)
				}
				wait, cancel := context.WithTimeout(ctx, 2*time.Minute)
				defer cancel()
				if _, err := prom.WaitForActiveAlert(wait, inc.alert, inc.labels); err != nil {
					t.Error(err)
				}
			})
		}
	})

	t.Run("the guard alerts stay silent in a run that gives them no cause", func(t *testing.T) {
		alerts := alertNames(ruleFiles)
		res, err := prom.API().Alerts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for name, why := range mustStaySilent {
			if !alerts[name] {
				t.Errorf("rules/ has no alert %s any more: update mustStaySilent", name)
			}
			for _, a := range res.Alerts {
				if string(a.Labels[model.AlertNameLabel]) == name {
					t.Errorf("%s is %s (%s) although %s", name, a.State, a.Labels, why)
				}
			}
		}
	})

	logAlerts(ctx, t, prom)
}

// stagedIncidents are the incidents runWorkload stages on purpose, with the alert (and the labels
// that point at the culprit) whose expression must catch each. Pending is enough: the alerts'
// `for` durations are minutes, longer than the test.
var stagedIncidents = []struct {
	name   string
	alert  string
	labels map[string]string
}{
	{
		// The editor is no service account: the controller's pod, a scrape target, names the
		// workload (through the recorded jobs of the offenders' pods).
		name:  "the editor and the controller fight over alpha",
		alert: gen.WriteFight.FullName(),
		labels: map[string]string{"object_name": "alpha", "actor_a": "editor", "actor_b": "system:serviceaccount:" + workloadNamespace + ":mirror-controller",
			"namespace": workloadNamespace, "job": scrapeJob},
	},
	{
		name:   "the editor rewrites hot alone many times a second",
		alert:  gen.HotObject.FullName(),
		labels: map[string]string{"object_name": "hot", "actor": "editor"},
	},
	{
		name:   "two pods of the racer service account write raced",
		alert:  gen.ReplicaRace.FullName(),
		labels: map[string]string{"object_name": "raced", "actor": "system:serviceaccount:" + workloadNamespace + ":racer"},
	},
}

// mustStaySilent are alerts whose expression must not match at all in this run, with the reason.
// A false positive here would page someone for a healthy controller or audit pipeline.
var mustStaySilent = map[string]string{
	gen.ControllerMetricsMissing.FullName():        "the controller is scraped and exports its metrics",
	gen.WorkqueueMetricsMissing.FullName():         "the controller's workqueue metrics are registered",
	gen.WorkqueueControllerLabelMissing.FullName(): "the controller's workqueue series carry the controller label",
	gen.ClassicHistogramsMissing.FullName():        "Prometheus keeps the classic histogram series",
	gen.MaxConcurrentReconcilesMissing.FullName():  "Prometheus keeps every series of the controller",
	gen.LeaderMissing.FullName():                   "the only manager holds its lease",
	gen.LeaderMultiple.FullName():                  "a single manager runs",
	gen.AuditExporterNotReceiving.FullName():       "kube-apiserver posts a batch every second",
	gen.AuditExporterDropping.FullName():           "the exporter drops nothing at this volume",
	gen.AuditWebhookErrors.FullName():              "the exporter accepts every batch",
	gen.APFRequestsRejected.FullName():             "API Priority and Fairness rejects nothing at this load",
	gen.APFQueueWaitHigh.FullName():                "no request waits a second for a seat at this load",
}

// alertNames lists the alerting rules in the rule files.
func alertNames(files map[string]ruleFile) map[string]bool {
	names := map[string]bool{}
	for _, rf := range files {
		for _, g := range rf.Groups {
			for _, r := range g.Rules {
				if r.Alert != "" {
					names[r.Alert] = true
				}
			}
		}
	}
	return names
}

// createManifest creates the PrometheusRule in data (in its own namespace) through the real API
// server, so the real CRD's OpenAPI schema validates it.
func createManifest(ctx context.Context, t *testing.T, cp *stack.ControlPlane, data []byte) {
	t.Helper()
	var obj unstructured.Unstructured
	if err := yaml.Unmarshal(data, &obj.Object); err != nil {
		t.Fatal(err)
	}
	ns := obj.GetNamespace()
	if ns == "" {
		ns = "default"
		obj.SetNamespace(ns)
	}
	admin := kubernetes.NewForConfigOrDie(cp.AdminConfig())
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "prometheusrules"}
	res := dynamic.NewForConfigOrDie(cp.AdminConfig()).Resource(gvr).Namespace(ns)
	created, err := res.Create(ctx, &obj, metav1.CreateOptions{FieldValidation: "Strict"})
	if err != nil {
		t.Fatalf("create PrometheusRule %s/%s: %v", ns, obj.GetName(), err)
	}
	want, _, _ := unstructured.NestedSlice(obj.Object, "spec", "groups")
	got, _, _ := unstructured.NestedSlice(created.Object, "spec", "groups")
	if len(got) != len(want) || len(got) == 0 {
		t.Errorf("stored PrometheusRule has %d groups, manifest %d", len(got), len(want))
	}
}

// expectData checks that expr returns samples; when reason says why it legitimately returns
// none, it checks that it indeed returns none.
func expectData(ctx context.Context, t *testing.T, prom *stack.Prometheus, expr, reason string) {
	t.Helper()
	if reason != "" {
		v, err := prom.Query(ctx, expr)
		if err != nil {
			t.Fatal(err)
		}
		if len(v) > 0 {
			t.Errorf("allow-listed as empty (%s) but returned %d samples: remove it from the list", reason, len(v))
		}
		return
	}
	// The exporter publishes fights, hot objects and races as it re-ranks its offenders, up to a
	// minute after the writes; the rest has data at once.
	wait, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	v, err := prom.WaitForQuery(wait, expr)
	if err != nil {
		t.Fatal(err)
	}
	if nan := countNaN(v); nan == len(v) {
		t.Logf("%s: every one of %d samples is NaN", expr, nan)
	}
}

func countNaN(v model.Vector) int {
	n := 0
	for _, s := range v {
		if math.IsNaN(float64(s.Value)) {
			n++
		}
	}
	return n
}

// logAlerts prints which generated alerts are pending or firing in the healthy run, for the reader.
func logAlerts(ctx context.Context, t *testing.T, prom *stack.Prometheus) {
	res, err := prom.API().Alerts(ctx)
	if err != nil {
		t.Logf("list alerts: %v", err)
		return
	}
	for _, a := range res.Alerts {
		t.Logf("alert %s %s", a.State, a.Labels)
	}
}

// exporterAuditPolicy is the exporter's shipped policy that records reads too (so relist panels
// have data), or the default write-only policy while the exporter ships none.
func exporterAuditPolicy(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "exporter", "deploy", "audit-policy-reads.yaml"))
	if errors.Is(err, os.ErrNotExist) {
		return []byte(stack.DefaultAuditPolicy)
	}
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// longestOffset is the longest offset of a series selector in expr.
func longestOffset(t *testing.T, expr string) time.Duration {
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	var longest time.Duration
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			longest = max(longest, vs.OriginalOffset)
		}
		return nil
	})
	return longest
}
