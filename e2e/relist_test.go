package e2e_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/loopwatch/loopwatch/gen"
	"github.com/loopwatch/loopwatch/internal/relist"
	"github.com/loopwatch/loopwatch/internal/stack"
)

// TestWatchListRelistStormFiresTheRelistAlert: a client with WatchList on (client-go's default
// from v0.35, so in the version this module pins) restarts its informer in a loop. Its relists
// reach the real kube-apiserver as WATCHes with sendInitialEvents=true, not one LIST; the audit
// webhook carries them to the exporter, which counts them as initial lists; Prometheus, loaded
// with the generated rules (20s `for`, 2s evaluation), fires LoopwatchRelistStorm for that
// actor. A healthy informer of another actor, watching all along, is not named.
func TestWatchListRelistStormFiresTheRelistAlert(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kube-apiserver, etcd and Prometheus")
	}
	if !relist.WatchListEnabled() {
		t.Fatal("client-go's WatchList is off: this test would prove nothing about it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	webhook, exporterAddr, exporterToken := startExporter(t)
	cp := stack.NewTestControlPlane(t, stack.ControlPlaneOptions{
		AuditWebhook: webhook,
		AuditPolicy:  exporterAuditPolicy(t),
		AuditLog:     true,
	})
	const ns = "relist-storm"
	admin := kubernetes.NewForConfigOrDie(cp.AdminConfig())
	readConfigMaps := rbacv1.PolicyRule{Verbs: []string{"list", "watch"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}
	configFor := func(name string) *rest.Config {
		cfg, err := cp.ServiceAccountConfig(ctx, ns, name)
		if err != nil {
			t.Fatal(err)
		}
		if err := cp.Grant(ctx, stack.ServiceAccountSubject(ns, name), readConfigMaps); err != nil {
			t.Fatal(err)
		}
		cfg.QPS, cfg.Burst = 1000, 1000
		return cfg
	}
	stormer, steady := configFor("relister"), configFor("steady")
	for i := range 5 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("settings-", i)}, Data: map[string]string{"k": "v"}}
		if _, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	prom := stack.NewTestPrometheus(t, stack.PrometheusOptions{
		RuleFiles: []string{relistRules(t)},
		Targets: []stack.ScrapeTarget{{
			Job: exporterJob, Addresses: []string{exporterAddr}, Scheme: "https", TLS: &stack.TLSFiles{InsecureSkipVerify: true},
			BearerTokenFile: exporterToken, Labels: map[string]string{"namespace": "loopwatch", "pod": "loopwatch-exporter-0"},
		}},
	})
	if err := prom.WaitForTargetsUp(ctx); err != nil {
		t.Fatal(err)
	}

	configMaps := relist.Options{Resource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Namespace: ns}
	workload, stopWorkload := context.WithCancel(ctx)
	var wg sync.WaitGroup
	relists := make([]int, 3)
	wg.Add(1)
	go func() { // the healthy informer: lists once, then watches
		defer wg.Done()
		if err := relist.Once(workload, dynamic.NewForConfigOrDie(steady), relist.Options{Resource: configMaps.Resource, Namespace: ns, SyncTimeout: time.Hour}); err != nil && workload.Err() == nil {
			t.Errorf("steady informer: %v", err)
		}
	}()
	start := time.Now()
	for i := 1; i < len(relists); i++ { // the storm: two goroutines of one actor relisting back to back
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := relist.Run(workload, stormer, configMaps)
			relists[i] = n
			if err != nil {
				t.Errorf("relister: %v", err)
			}
		}()
	}
	actor := "system:serviceaccount:" + ns + ":relister"
	alert, err := prom.WaitForAlert(ctx, gen.RelistStorm.FullName(), map[string]string{"actor": actor, "resource": "configmaps"})
	fired := time.Since(start)
	stopWorkload()
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	total := relists[1] + relists[2]
	t.Logf("%s fired %s after the storm began (%d relists, %.1f/s): %s", gen.RelistStorm.FullName(), fired.Round(time.Second), total, float64(total)/fired.Seconds(), alert.Annotations["description"])

	t.Run("the storm's initial lists were all WATCHes with sendInitialEvents=true", func(t *testing.T) {
		for verb, want := range map[string]bool{"watch": true, "list": false} {
			q := fmt.Sprintf(`sum(loopwatch_audit_initial_lists_total{actor=%q, verb=%q})`, actor, verb)
			v, err := prom.Query(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(v) > 0 && v[0].Value > 0; got != want {
				t.Errorf("%s: %v, want initial lists %v", q, v, want)
			}
		}
		watches, lists := auditLogRequests(t, cp.AuditLogPath(), actor)
		t.Logf("audit log: %d watches with sendInitialEvents=true, %d lists by %s", watches, lists, actor)
		if lists != 0 || watches < total {
			t.Errorf("audit log: %d initial-state watches and %d lists for %d relists; want only watches", watches, lists, total)
		}
	})
	t.Run("the healthy informer is not named", func(t *testing.T) {
		alerts, err := prom.API().Alerts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range alerts.Alerts {
			if string(a.Labels["alertname"]) == gen.RelistStorm.FullName() && string(a.Labels["actor"]) != actor {
				t.Errorf("%s names %s", gen.RelistStorm.FullName(), a.Labels["actor"])
			}
		}
	})
}

// relistRules writes the rules gen generates for this test: production expressions and
// thresholds, the exporter selected by its job, 20s `for` durations and a 2s evaluation interval.
func relistRules(t *testing.T) string {
	t.Helper()
	cfg := gen.Default()
	cfg.Selectors.Exporter = `job="` + exporterJob + `"`
	return shortRules(t, cfg)
}

// shortRules writes the rule file generated from cfg with every alert's `for` at 20s and rules
// evaluated every 2s, and returns its path.
func shortRules(t *testing.T, cfg gen.Config) string {
	t.Helper()
	cfg.RuleInterval = gen.Duration(2 * time.Second)
	cfg.Alerts.SetFor(20 * time.Second)
	m, err := gen.Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	files, err := m.Files()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := gen.WriteFiles(dir, files); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, gen.RulesFile)
}

// auditLogRequests counts the actor's completed configmap watches with sendInitialEvents=true and
// lists in the API server's own audit log.
func auditLogRequests(t *testing.T, path, actor string) (watches, lists int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, `"username":"`+actor+`"`) || !strings.Contains(line, `"stage":"ResponseComplete"`) || !strings.Contains(line, `"resource":"configmaps"`) {
			continue
		}
		switch {
		case strings.Contains(line, `"verb":"list"`):
			lists++
		case strings.Contains(line, `"verb":"watch"`) && strings.Contains(line, "sendInitialEvents=true"):
			watches++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return watches, lists
}
