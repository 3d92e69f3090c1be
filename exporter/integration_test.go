package exporter

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/loopwatch/loopwatch/catalogue"
	"github.com/loopwatch/loopwatch/exporter/analyze"
	"github.com/loopwatch/loopwatch/exporter/track"
	"github.com/loopwatch/loopwatch/internal/serve"
	"github.com/loopwatch/loopwatch/internal/stack"
)

const itNamespace = "loopwatch-it"

// itTrackerConfig is the detection configuration of the tests on a real API server, which sends
// its batches at most a second apart and retries a refused one after 1 s (stack's audit flags):
// writes wait 3 s for their turn, not the 20 s the deploy files' 5 s batches and 10 s back-off
// need.
func itTrackerConfig() track.Config {
	return track.Config{FightHandoffs: 4, FightWindow: time.Minute, HotWrites: 20, HotWindow: time.Minute, RaceWindow: time.Minute, ReorderWait: 3 * time.Second}
}

// TestIntegrationKubeAPIServerAuditWebhook runs a real kube-apiserver whose audit webhook posts
// to the exporter over TLS with a client certificate, provokes a fight, a replica race with
// conflicts and a hot object with real clients, and checks what the exporter and
// `audit analyze` (on the same API server's log backend file) report.
func TestIntegrationKubeAPIServerAuditWebhook(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kube-apiserver and etcd")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	e, reg, pki, addr := startWebhookExporter(t)
	cp := stack.NewTestControlPlane(t, stack.ControlPlaneOptions{
		AuditWebhook: pki.auditWebhook(t, addr),
		AuditLog:     true,
	})
	admin := kubernetes.NewForConfigOrDie(cp.AdminConfig())

	start := time.Now()
	fighters := provokeFight(ctx, t, cp, admin)
	syncer := provokeReplicaRace(ctx, t, cp, admin)
	stamper := provokeHotObject(ctx, t, cp, admin)
	t.Logf("Provoked the incidents in %s", time.Since(start).Round(time.Millisecond))

	// An unauthenticated sender is refused and counted.
	resp, err := (&http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pki.roots}}}).
		Post("https://"+addr+WebhookPath, "application/json", strings.NewReader(`{"kind":"EventList","items":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("unauthenticated post answered %d, want 401", resp.StatusCode)
	}

	// The exporter sees all three within seconds of the last write.
	waitStart := time.Now()
	for {
		f, r, h := e.Tracker().Fights(), e.Tracker().Races(), e.Tracker().HotObjects()
		if len(f) > 0 && len(r) > 0 && len(h) > 0 && r[0].Conflicts >= 4 && h[0].Writes >= 100 {
			break
		}
		if time.Since(waitStart) > 20*time.Second {
			t.Fatalf("exporter did not report the incidents within 20s: fights %+v, races %+v, hot %+v", f, r, h)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("Exporter reported the fight, race and hot object %s after the last write", time.Since(waitStart).Round(time.Millisecond))

	a, b := fighters[0], fighters[1]
	want := fmt.Sprintf(`
# HELP loopwatch_audit_fight_handoffs %[1]s
# TYPE loopwatch_audit_fight_handoffs gauge
loopwatch_audit_fight_handoffs{actor_a=%[2]q,actor_b=%[3]q,actor_namespace_a=%[4]q,actor_namespace_b=%[4]q,actor_pod_a="",actor_pod_b="",actor_service_account_a="fighter-a",actor_service_account_b="fighter-b",field_manager_a="exporter.test",field_manager_b="exporter.test",group="",mutating_webhook="",object_name="target",object_namespace=%[4]q,resource="serviceaccounts",subresource=""} 7
# HELP loopwatch_audit_replica_race_pods %[5]s
# TYPE loopwatch_audit_replica_race_pods gauge
loopwatch_audit_replica_race_pods{actor=%[6]q,actor_namespace=%[4]q,actor_pod="syncer-1",actor_service_account="syncer",group="",object_name="state",object_namespace=%[4]q,resource="configmaps",subresource=""} 2
`, catalogue.AuditFightHandoffs.Help, a, b, itNamespace, catalogue.AuditReplicaRacePods.Help, syncer)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"loopwatch_audit_fight_handoffs", "loopwatch_audit_replica_race_pods"); err != nil {
		t.Error(err)
	}
	hot := e.Tracker().HotObjects()
	if len(hot) != 1 || hot[0].Actor != stamper || hot[0].Object.Name != "heartbeat" || hot[0].Writes != 100 {
		t.Errorf("hot objects %+v, want heartbeat by %s with 100 writes", hot, stamper)
	}
	metrics := httpGet(t, "https://"+addr+"/metrics", pki)
	for _, wantLine := range []string{
		// The clients set no fieldManager: the API server records the user agent's product.
		fmt.Sprintf(`loopwatch_audit_hot_object_writes_per_second{actor=%q,actor_namespace=%[2]q,actor_pod="",actor_service_account="stamper",field_manager="exporter.test",group="",mutating_webhook="",object_name="heartbeat",object_namespace=%[2]q,resource="configmaps",subresource=""}`, stamper, itNamespace),
		fmt.Sprintf(`loopwatch_audit_handoffs_total{from_actor=%q,group="",resource="serviceaccounts",to_actor=%q}`, a, b),
		fmt.Sprintf(`loopwatch_audit_handoffs_total{from_actor=%q,group="",resource="serviceaccounts",to_actor=%q}`, b, a),
		`loopwatch_audit_requests_total{outcome="rejected",reason="unauthenticated"} 1`,
		fmt.Sprintf(`loopwatch_audit_conflicts_total{actor=%q,group="",resource="configmaps"} 4`, syncer),
	} {
		if !strings.Contains(metrics, wantLine) {
			t.Errorf("/metrics lacks %s", wantLine)
		}
	}
	if v := testutil.ToFloat64(e.metrics.requests.WithLabelValues(OutcomeAccepted, ReasonOK)); v < 1 {
		t.Errorf("no batch accepted from the API server")
	}

	// The same API server's log backend file tells the same story.
	f, err := os.Open(cp.AuditLogPath())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := analyze.Analyze(f, analyze.Options{Tracker: itTrackerConfig()})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	_ = rep.WriteText(&text)
	if len(rep.Fights) != 1 || rep.Fights[0].ActorA != a || rep.Fights[0].ActorB != b || rep.Fights[0].Object.Name != "target" || rep.Fights[0].Handoffs != 7 {
		t.Errorf("analyze fights %+v", rep.Fights)
	}
	if len(rep.HotObjects) != 1 || rep.HotObjects[0].Actor != stamper || rep.HotObjects[0].Writes != 100 {
		t.Errorf("analyze hot objects %+v", rep.HotObjects)
	}
	if len(rep.Races) != 1 || strings.Join(rep.Races[0].Pods, ",") != "syncer-0,syncer-1" || rep.Races[0].Conflicts != 4 {
		t.Errorf("analyze races %+v", rep.Races)
	}
	if t.Failed() {
		t.Logf("audit analyze report:\n%s", text.String())
	}
}

func httpGet(t *testing.T, url string, pki *testPKI) string {
	t.Helper()
	// /metrics names users and objects: it takes the webhook's credentials (or scrape ones).
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pki.roots, Certificates: []tls.Certificate{pki.client}}}, Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func clientFor(t *testing.T, cfg *rest.Config, err error) kubernetes.Interface {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 1000, 1000 // client-go's default 5 QPS would spread the hot loop over 20s
	return kubernetes.NewForConfigOrDie(cfg)
}

func grant(ctx context.Context, t *testing.T, cp *stack.ControlPlane, sa string, resource string, verbs ...string) {
	t.Helper()
	if err := cp.Grant(ctx, stack.ServiceAccountSubject(itNamespace, sa), rbacv1.PolicyRule{
		APIGroups: []string{""}, Resources: []string{resource}, Verbs: verbs,
	}); err != nil {
		t.Fatal(err)
	}
}

// provokeFight has two service accounts alternately patch one annotation on one ServiceAccount.
func provokeFight(ctx context.Context, t *testing.T, cp *stack.ControlPlane, admin kubernetes.Interface) [2]string {
	t.Helper()
	clients := [2]kubernetes.Interface{}
	for i, name := range []string{"fighter-a", "fighter-b"} {
		cfg, err := cp.ServiceAccountConfig(ctx, itNamespace, name)
		clients[i] = clientFor(t, cfg, err)
		grant(ctx, t, cp, name, "serviceaccounts", "get", "patch")
	}
	if _, err := admin.CoreV1().ServiceAccounts(itNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "target"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"loopwatch.dev/owner":"fighter-%d"}}}`, i%2)
		if _, err := clients[i%2].CoreV1().ServiceAccounts(itNamespace).Patch(ctx, "target", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return [2]string{"system:serviceaccount:" + itNamespace + ":fighter-a", "system:serviceaccount:" + itNamespace + ":fighter-b"}
}

// provokeReplicaRace has two pods of one service account (pod-bound tokens) update one
// ConfigMap from stale reads, so that four updates are answered 409.
func provokeReplicaRace(ctx context.Context, t *testing.T, cp *stack.ControlPlane, admin kubernetes.Interface) string {
	t.Helper()
	var pods [2]kubernetes.Interface
	for i := range pods {
		cfg, err := cp.PodConfig(ctx, itNamespace, "syncer", fmt.Sprintf("syncer-%d", i))
		pods[i] = clientFor(t, cfg, err)
	}
	grant(ctx, t, cp, "syncer", "configmaps", "get", "update")
	cms := admin.CoreV1().ConfigMaps(itNamespace)
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "state"}, Data: map[string]string{"v": "0"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		var read [2]*corev1.ConfigMap
		for p, c := range pods {
			cm, err := c.CoreV1().ConfigMaps(itNamespace).Get(ctx, "state", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			read[p] = cm
		}
		for p, c := range pods {
			read[p].Data["v"] = fmt.Sprintf("%d-%d", i, p)
			_, err := c.CoreV1().ConfigMaps(itNamespace).Update(ctx, read[p], metav1.UpdateOptions{})
			switch {
			case p == 0 && err != nil:
				t.Fatal(err)
			case p == 1 && !apierrors.IsConflict(err):
				t.Fatalf("stale update by the second pod: %v, want a conflict", err)
			}
		}
		// The second replica retries from a fresh read and wins this round.
		cm, err := pods[1].CoreV1().ConfigMaps(itNamespace).Get(ctx, "state", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data["v"] = fmt.Sprintf("%d-retry", i)
		if _, err := pods[1].CoreV1().ConfigMaps(itNamespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return "system:serviceaccount:" + itNamespace + ":syncer"
}

// provokeHotObject has one actor patch a timestamp annotation on one ConfigMap 100 times.
func provokeHotObject(ctx context.Context, t *testing.T, cp *stack.ControlPlane, admin kubernetes.Interface) string {
	t.Helper()
	cfg, err := cp.ServiceAccountConfig(ctx, itNamespace, "stamper")
	c := clientFor(t, cfg, err)
	grant(ctx, t, cp, "stamper", "configmaps", "get", "patch")
	if _, err := admin.CoreV1().ConfigMaps(itNamespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "heartbeat"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"loopwatch.dev/last-seen":"%s-%d"}}}`, time.Now().UTC().Format(time.RFC3339Nano), i)
		if _, err := c.CoreV1().ConfigMaps(itNamespace).Patch(ctx, "heartbeat", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return "system:serviceaccount:" + itNamespace + ":stamper"
}

// startWebhookExporter serves a new exporter on a loopback TLS port that accepts the test PKI's
// client certificate only (a batch that arrives proves the API server authenticated with it).
func startWebhookExporter(t *testing.T) (*Exporter, *prometheus.Registry, *testPKI, string) {
	t.Helper()
	pki := newTestPKI(t)
	reg := prometheus.NewRegistry()
	e, err := New(Config{Registerer: reg, Tracker: itTrackerConfig(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(ServerConfig{
		Addr: "127.0.0.1:0", TLSCertFile: pki.certFile, TLSKeyFile: pki.keyFile, ClientCAFile: pki.caFile,
		Gatherer: reg, Logger: slog.New(slog.DiscardHandler),
	}, e)
	if err != nil {
		t.Fatal(err)
	}
	return e, reg, pki, serve.Loopback(t, srv)
}

// auditWebhook is the API server's webhook to the exporter at addr, with the PKI's client
// certificate.
func (p *testPKI) auditWebhook(t *testing.T, addr string) *stack.AuditWebhook {
	t.Helper()
	read := func(path string) []byte {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	return &stack.AuditWebhook{
		URL: "https://" + addr + WebhookPath, CAData: read(p.caFile),
		ClientCertData: read(p.clientCertFile), ClientKeyData: read(p.clientKeyFile),
	}
}
