package exporter

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/loopwatch/loopwatch/exporter/analyze"
	"github.com/loopwatch/loopwatch/internal/stack"
)

const (
	webhookNamespace     = "webhook-fight"
	webhookConfiguration = "mode-defaults"
	webhookName          = "mode.defaults.loopwatch.dev"
	webhookSelector      = "loopwatch.dev/mode-defaults"
)

// modeDefaulter is a mutating admission webhook that resets data.mode to "default" on every
// write by the users it is given: the kind of defaulting webhook that rewrites what a controller
// writes.
type modeDefaulter struct {
	users map[string]bool
	// slow delays the writes of these users by as much, changing nothing: admission that takes
	// its time (TestWritesAreOrderedAsStored).
	slow  map[string]time.Duration
	mu    sync.Mutex
	calls int
}

func (m *modeDefaulter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "bad admission review", http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	m.calls++
	m.mu.Unlock()
	resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
	if d := m.slow[review.Request.UserInfo.Username]; d > 0 {
		time.Sleep(d)
	}
	if m.users[review.Request.UserInfo.Username] {
		pt := admissionv1.PatchTypeJSONPatch
		resp.PatchType, resp.Patch = &pt, []byte(`[{"op":"add","path":"/data/mode","value":"default"}]`)
	}
	review.Response, review.Request = resp, nil
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(review)
}

// TestFightThroughAMutatingWebhookNamesIt runs a real mutating admission webhook (an HTTPS server
// in the test, registered with a MutatingWebhookConfiguration) that resets data.mode on the writes
// of two controllers, and:
//   - a two-controller fight it causes: "stamper" only annotates the ConfigMap after anyone
//     else's change, but the webhook resets mode on each of its writes, which "mode-keeper" (who
//     wants mode=b) sets back, which stamper annotates again...;
//   - a controller that loops with it: "looper" sets mode=a, the webhook resets it, looper sets
//     it again.
//
// The exporter, fed by the real audit webhook, and `audit analyze`, reading the API server's
// audit log, name the webhook (and each controller's field manager) in the fight and the hot
// object.
func TestFightThroughAMutatingWebhookNamesIt(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kube-apiserver and etcd")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	e, _, pki, addr := startWebhookExporter(t)
	cp := stack.NewTestControlPlane(t, stack.ControlPlaneOptions{
		AuditWebhook: pki.auditWebhook(t, addr),
		AuditLog:     true,
	})
	admin := kubernetes.NewForConfigOrDie(cp.AdminConfig())

	sa := func(name string) string { return "system:serviceaccount:" + webhookNamespace + ":" + name }
	defaulter := &modeDefaulter{users: map[string]bool{sa("stamper"): true, sa("looper"): true}}
	registerWebhook(ctx, t, admin, defaulter)
	clients := map[string]kubernetes.Interface{}
	for _, name := range []string{"stamper", "mode-keeper", "looper"} {
		cfg, err := cp.ServiceAccountConfig(ctx, webhookNamespace, name)
		if err != nil {
			t.Fatal(err)
		}
		if err := cp.Grant(ctx, stack.ServiceAccountSubject(webhookNamespace, name),
			rbacv1.PolicyRule{Verbs: []string{"get", "patch"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}); err != nil {
			t.Fatal(err)
		}
		cfg.QPS, cfg.Burst = 1000, 1000
		clients[name] = kubernetes.NewForConfigOrDie(cfg)
	}
	for _, name := range []string{"shared", "looping"} {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: webhookNamespace, Labels: map[string]string{webhookSelector: "on"}},
			Data:       map[string]string{"mode": "b"},
		}
		if _, err := admin.CoreV1().ConfigMaps(webhookNamespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	work, stopWork := context.WithTimeout(ctx, 20*time.Second)
	defer stopWork()
	var wg sync.WaitGroup
	patch := func(who, name, body string) string {
		cm, err := clients[who].CoreV1().ConfigMaps(webhookNamespace).Patch(work, name, types.MergePatchType, []byte(body),
			metav1.PatchOptions{FieldManager: who})
		if err != nil {
			if work.Err() == nil {
				t.Errorf("%s: patch %s: %v", who, name, err)
			}
			return ""
		}
		return cm.ResourceVersion
	}
	loop := func(who, name string, step func(cm *corev1.ConfigMap)) {
		defer wg.Done()
		for work.Err() == nil {
			cm, err := clients[who].CoreV1().ConfigMaps(webhookNamespace).Get(work, name, metav1.GetOptions{})
			if err == nil {
				step(cm)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	stamped, stamps := "", 0
	wg.Add(3)
	go loop("stamper", "shared", func(cm *corev1.ConfigMap) { // annotates each change it did not make
		if cm.ResourceVersion != stamped {
			stamps++
			stamped = patch("stamper", "shared", fmt.Sprintf(`{"metadata":{"annotations":{"stamper/seen":"%d"}}}`, stamps))
		}
	})
	go loop("mode-keeper", "shared", func(cm *corev1.ConfigMap) { // wants mode=b
		if cm.Data["mode"] != "b" {
			patch("mode-keeper", "shared", `{"data":{"mode":"b"}}`)
		}
	})
	go loop("looper", "looping", func(cm *corev1.ConfigMap) { // wants mode=a
		if cm.Data["mode"] != "a" {
			patch("looper", "looping", `{"data":{"mode":"a"}}`)
		}
	})
	want := webhookConfiguration + "/" + webhookName
	found := func() bool {
		f, h := e.Tracker().Fights(), e.Tracker().HotObjects()
		return len(f) > 0 && f[0].MutatingWebhook == want && len(h) > 0 && h[0].MutatingWebhook == want
	}
	for !found() && work.Err() == nil {
		time.Sleep(200 * time.Millisecond)
	}
	stopWork()
	wg.Wait()

	t.Run("the exporter names the webhook in the fight and the hot object", func(t *testing.T) {
		fights, hot := e.Tracker().Fights(), e.Tracker().HotObjects()
		t.Logf("fights %+v", fights)
		t.Logf("hot objects %+v", hot)
		if len(fights) != 1 || len(hot) != 1 {
			t.Fatalf("%d fights, %d hot objects; want one each (webhook called %d times)", len(fights), len(hot), defaulter.calls)
		}
		f, h := fights[0], hot[0]
		if f.Object.Name != "shared" || f.ActorA != sa("mode-keeper") || f.ActorB != sa("stamper") || f.MutatingWebhook != want ||
			f.MutatedActor != sa("stamper") || f.FieldManagerA != "mode-keeper" || f.FieldManagerB != "stamper" {
			t.Errorf("fight %+v: want mode-keeper and stamper on shared, %s changing stamper's writes", f, want)
		}
		if h.Object.Name != "looping" || h.Actor != sa("looper") || h.MutatingWebhook != want || h.FieldManager != "looper" {
			t.Errorf("hot object %+v: want looper on looping, %s", h, want)
		}
		metrics := httpGet(t, "https://"+addr+"/metrics", pki)
		for _, series := range []string{
			// Tokens bound to no pod: each actor's namespace and service account, no pod.
			fmt.Sprintf(`loopwatch_audit_fight_handoffs{actor_a=%q,actor_b=%q,actor_namespace_a=%[3]q,actor_namespace_b=%[3]q,actor_pod_a="",actor_pod_b="",actor_service_account_a="mode-keeper",actor_service_account_b="stamper",field_manager_a="mode-keeper",field_manager_b="stamper",group="",mutating_webhook=%[4]q,object_name="shared"`, sa("mode-keeper"), sa("stamper"), webhookNamespace, want),
			fmt.Sprintf(`loopwatch_audit_hot_object_writes_per_second{actor=%q,actor_namespace=%q,actor_pod="",actor_service_account="looper",field_manager="looper",group="",mutating_webhook=%q,object_name="looping"`, sa("looper"), webhookNamespace, want),
		} {
			if !strings.Contains(metrics, series) {
				t.Errorf("/metrics lacks %s", series)
			}
		}
	})

	t.Run("audit analyze names the webhook from the API server's audit log", func(t *testing.T) {
		f, err := os.Open(cp.AuditLogPath())
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		rep, err := analyze.Analyze(f, analyze.Options{Tracker: itTrackerConfig()})
		if err != nil {
			t.Fatal(err)
		}
		var text bytes.Buffer
		if err := rep.WriteText(&text); err != nil {
			t.Fatal(err)
		}
		t.Logf("audit analyze:\n%s", text.String())
		if len(rep.Fights) != 1 || rep.Fights[0].MutatingWebhook != want || len(rep.HotObjects) != 1 || rep.HotObjects[0].MutatingWebhook != want {
			t.Fatalf("report does not name %s", want)
		}
		if !strings.Contains(text.String(), want+" (writes of "+sa("stamper")+")") {
			t.Errorf("the fight's line does not say whose writes the webhook changed")
		}
	})
}

// registerWebhook serves d over HTTPS on loopback and registers it for configmap writes in the
// test's namespace, then waits until the API server calls it.
func registerWebhook(ctx context.Context, t *testing.T, admin kubernetes.Interface, d *modeDefaulter) {
	t.Helper()
	ca, err := stack.NewCertAuthority("mode-defaults-ca")
	if err != nil {
		t.Fatal(err)
	}
	kp, err := ca.Serving("mode-defaults")
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: d, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(l) }()
	t.Cleanup(func() { _ = hs.Close() })
	url := "https://" + l.Addr().String() + "/mutate"
	none, fail, never := admissionregistrationv1.SideEffectClassNone, admissionregistrationv1.Fail, admissionregistrationv1.NeverReinvocationPolicy
	namespaced := admissionregistrationv1.NamespacedScope
	timeout := int32(5)
	_, err = admin.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: webhookConfiguration},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:         webhookName,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca.CertPEM()},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{
					APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}, Scope: &namespaced,
				},
			}},
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{webhookSelector: "on"}},
			SideEffects:             &none,
			FailurePolicy:           &fail,
			ReinvocationPolicy:      &never,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The API server loads webhook configurations from an informer: write a probe until it is
	// called.
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: webhookNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Namespace: webhookNamespace, Labels: map[string]string{webhookSelector: "on"}}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := admin.CoreV1().ConfigMaps(webhookNamespace).Create(ctx, probe, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		d.mu.Lock()
		calls := d.calls
		d.mu.Unlock()
		if calls > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the API server did not call the mutating webhook within 30s")
		}
		time.Sleep(200 * time.Millisecond)
	}
}
