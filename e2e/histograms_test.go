package e2e_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/loopwatch/loopwatch/gen"
	"github.com/loopwatch/loopwatch/internal/crtest"
	"github.com/loopwatch/loopwatch/internal/stack"
)

// TestClassicHistogramsMissingOnRealScrapes: a controller of the pinned controller-runtime
// reconciles in this process (fed by a source of its own: no API server is needed for its
// metrics), its metrics are served on three addresses, and the real Prometheus scrapes each as a
// job of its own, one per way of storing histograms: classic (the default), native only
// (scrape_native_histograms) and converted to native histograms with custom buckets only
// (convert_classic_histograms_to_nhcb). A fourth job scrapes the classic job's address native
// only, as a second job beside the one the rules read does. The classic series that loopwatch's
// latency and queue rules read exist for the classic job alone, and the generated
// LoopwatchClassicHistogramsMissing fires for the native-only and the NHCB-only jobs, and never
// for the classic job nor for the fourth, whose targets' classic series the classic job keeps.
func TestClassicHistogramsMissingOnRealScrapes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	const name = "histogram-probe"
	reconcileForever(ctx, t, name)
	classicAddr, nativeAddr, nhcbAddr := serveControllerRuntimeMetrics(t), serveControllerRuntimeMetrics(t), serveControllerRuntimeMetrics(t)

	const classic, native, nhcb, twin = "probe-classic", "probe-native", "probe-nhcb", "probe-classic-native"
	prom := stack.NewTestPrometheus(t, stack.PrometheusOptions{
		RuleFiles: []string{shortRules(t, gen.Default())},
		Targets: []stack.ScrapeTarget{
			{Job: classic, Addresses: []string{classicAddr}},
			{Job: native, Addresses: []string{nativeAddr}, Histograms: stack.HistogramsNativeOnly},
			{Job: nhcb, Addresses: []string{nhcbAddr}, Histograms: stack.HistogramsNHCBOnly},
			{Job: twin, Addresses: []string{classicAddr}, Histograms: stack.HistogramsNativeOnly},
		},
		OneEvaluationInterval: true,
	})

	alert := gen.ClassicHistogramsMissing.FullName()
	for _, job := range []string{native, nhcb} {
		a, err := prom.WaitForAlert(ctx, alert, map[string]string{"job": job})
		if err != nil {
			t.Fatalf("%s for job %s: %v", alert, job, err)
		}
		t.Logf("%s fires for job %s: %s", alert, job, a.Annotations["description"])
	}

	// Only the classic job has the series the latency and queue rules read; only the other three
	// have the histogram under its own name.
	sel := `{controller="` + name + `"}`
	for series, want := range map[string][]string{
		"controller_runtime_reconcile_time_seconds_count" + sel:  {classic},
		"controller_runtime_reconcile_time_seconds_bucket" + sel: {classic},
		"workqueue_queue_duration_seconds_count" + sel:           {classic},
		"controller_runtime_reconcile_time_seconds" + sel:        {native, nhcb, twin},
	} {
		v, err := prom.Query(ctx, "count by (job) ("+series+")")
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, s := range v {
			got[string(s.Metric["job"])] = true
		}
		for _, job := range []string{classic, native, nhcb, twin} {
			if got[job] != slices.Contains(want, job) {
				t.Errorf("%s: job %s has it: %v, want %v", series, job, got[job], slices.Contains(want, job))
			}
		}
	}

	alerts, err := prom.API().Alerts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range alerts.Alerts {
		if job := string(a.Labels["job"]); string(a.Labels[model.AlertNameLabel]) == alert && (job == classic || job == twin) {
			t.Errorf("%s is %s for job %s, whose targets' classic series exist", alert, a.State, job)
		}
	}
	if t.Failed() {
		return
	}
	if n := countAlerts(alerts.Alerts, alert); n != 2 {
		t.Errorf("%s has %d instances, want 2 (one per native-only job)", alert, n)
	}
}

// reconcileForever runs a controller-runtime controller named name until ctx ends, fed five
// requests every 100ms, each reconciled in about 2ms.
func reconcileForever(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	slow := reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		time.Sleep(2 * time.Millisecond)
		return reconcile.Result{}, nil
	})
	wait, err := crtest.Start(ctx, name, slow, func(ctx context.Context, q crtest.Queue) {
		go func() {
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
					for i := range 5 {
						q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: fmt.Sprint("object-", i)}})
					}
				}
			}
		}()
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := wait(); err != nil {
			t.Error(err)
		}
	})
}

// serveControllerRuntimeMetrics serves controller-runtime's registry, the one its controllers
// record into, as a manager's metrics endpoint does (text, or protobuf with native histograms when
// the scraper asks for it), and returns its address.
func serveControllerRuntimeMetrics(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l.Addr().String()
}

func countAlerts(alerts []promv1.Alert, name string) int {
	n := 0
	for _, a := range alerts {
		if string(a.Labels[model.AlertNameLabel]) == name {
			n++
		}
	}
	return n
}
