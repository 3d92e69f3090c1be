package deploy_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/loopwatch/loopwatch/exporter"
	"github.com/loopwatch/loopwatch/exporter/cli"
	"github.com/loopwatch/loopwatch/internal/serve"
	"github.com/loopwatch/loopwatch/internal/stack"
)

// requestLevelPolicy records configmap creates with their bodies: events of ~80 KiB each, so that
// a few hundred of them make a batch over the exporter's body limit.
const requestLevelPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Request
    resources: [{group: "", resources: ["configmaps"]}]
    verbs: ["create"]
  - level: None
`

// TestDeployFilesOnTheRealAPIServer runs kube-apiserver with the deploy file's audit flags and the
// exporter with its Deployment's limits. 300 creates of 80 KiB ConfigMaps in a burst (24 MB of
// Request-level audit events, more than the exporter's 16 MiB body limit) all arrive, the API
// server having cut each event to Metadata level, and nothing is refused. With truncation
// off, a batch of the same burst is refused with 413 on every attempt and is lost: what the deploy
// flags prevent. The exporter's manifests (ServiceMonitor included) are accepted with strict field
// validation.
//
// The control batches by count, not by time: the API server's batch window restarts after every
// batch it sends, not at the first event, so a burst that straddles the end of a window goes out
// in two batches each under the limit, and a slow machine makes that likely (a 4.7 s burst in a
// 5 s window). With controlBatchEvents per batch and a window longer than the test, the first
// batch goes out when its last event arrives, ~20 MB whatever the burst's pace.
func TestDeployFilesOnTheRealAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kube-apiserver and etcd")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	opts := exporterOptions(t, deploymentOf(t))
	// The deploy file's flags, but for the two files, which the test control plane writes.
	var withTruncation, withoutTruncation []string
	for _, a := range apiServerAuditArgs(t) {
		if strings.HasPrefix(a, "--audit-policy-file=") || strings.HasPrefix(a, "--audit-webhook-config-file=") {
			continue
		}
		withTruncation = append(withTruncation, a)
		if !strings.HasPrefix(a, "--audit-webhook-truncate-") && !strings.HasPrefix(a, "--audit-webhook-batch-max-") {
			withoutTruncation = append(withoutTruncation, a)
		}
	}
	withoutTruncation = append(withoutTruncation,
		fmt.Sprint("--audit-webhook-batch-max-size=", controlBatchEvents), "--audit-webhook-batch-max-wait=30m")

	t.Run("with the deploy flags a burst over the exporter's limit arrives whole", func(t *testing.T) {
		reg, cp := deployStack(ctx, t, opts, withTruncation, true)
		t.Run("the exporter's manifests are accepted with strict field validation", func(t *testing.T) {
			createManifests(ctx, t, dynamic.NewForConfigOrDie(cp.AdminConfig()))
		})
		burst(ctx, t, cp)
		deadline := time.Now().Add(time.Minute)
		for creates(t, reg) < burstSize {
			if time.Now().After(deadline) {
				t.Fatalf("%v of %d creates counted within a minute, %v requests refused", creates(t, reg), burstSize, refused(t, reg))
			}
			time.Sleep(200 * time.Millisecond)
		}
		sizes := family(t, reg, "loopwatch_audit_request_bytes").GetMetric()[0].GetHistogram()
		t.Logf("MEASURED with the deploy flags: %d creates of 80 KiB ConfigMaps counted from %d batches (%.1f MB in all), %v requests refused",
			burstSize, sizes.GetSampleCount(), sizes.GetSampleSum()/1e6, refused(t, reg))
		if refused(t, reg) != 0 {
			t.Fatal("requests refused")
		}
		if sizes.GetSampleSum() > burstSize*2<<10 {
			t.Fatalf("%.1f MB received, want at most 2 KiB an event: the events were not cut to Metadata level", sizes.GetSampleSum()/1e6)
		}
	})

	t.Run("without truncation the same burst is refused and lost", func(t *testing.T) {
		reg, cp := deployStack(ctx, t, opts, withoutTruncation, false)
		burst(ctx, t, cp)
		// The API server tries the batch of controlBatchEvents 5 times (1 s initial back-off in the
		// test control plane), then drops it; the rest of the burst waits for the next batch.
		deadline := time.Now().Add(time.Minute)
		for tooLarge(t, reg) < 5 {
			if time.Now().After(deadline) {
				t.Fatalf("%v too_large refusals within a minute, want 5", tooLarge(t, reg))
			}
			time.Sleep(200 * time.Millisecond)
		}
		time.Sleep(5 * time.Second)
		t.Logf("MEASURED without truncation: %v too_large refusals, %v of %d creates counted", tooLarge(t, reg), creates(t, reg), burstSize)
		if got := creates(t, reg); got != 0 {
			t.Fatalf("%v creates counted, want 0: the refused batch arrived", got)
		}
	})
}

// burstSize is how many 80 KiB ConfigMaps a burst creates.
const burstSize = 300

// controlBatchEvents is the control's batch size in events: more than the 205 Request-level events
// of an 80 KiB ConfigMap that fill the exporter's 16 MiB, fewer than a burst (the API server's own
// startup writes may take a place in the first batch).
const controlBatchEvents = 250

// deployStack starts the exporter with the Deployment's limits and kube-apiserver with apiFlags,
// auditing configmap creates at Request level.
func deployStack(ctx context.Context, t *testing.T, opts cli.ExporterOptions, apiFlags []string, crds bool) (*prometheus.Registry, *stack.ControlPlane) {
	t.Helper()
	dir := t.TempDir()
	ca, err := stack.NewCertAuthority("loopwatch-deploy-test-ca")
	if err != nil {
		t.Fatal(err)
	}
	serving, err := ca.Serving("loopwatch-exporter")
	if err != nil {
		t.Fatal(err)
	}
	client, err := ca.Client("kube-apiserver-audit")
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile, err := serving.Write(dir, "serving")
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, ca.CertPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	ecfg := opts.Exporter
	ecfg.Registerer, ecfg.Logger = reg, slog.New(slog.DiscardHandler)
	e, err := exporter.New(ecfg)
	if err != nil {
		t.Fatal(err)
	}
	scfg := opts.Server
	scfg.Addr, scfg.TLSCertFile, scfg.TLSKeyFile, scfg.ClientCAFile = "127.0.0.1:0", certFile, keyFile, caFile
	scfg.MetricsTokenFile, scfg.Gatherer, scfg.Logger = "", reg, ecfg.Logger
	srv, err := exporter.NewServer(scfg, e)
	if err != nil {
		t.Fatal(err)
	}
	addr := serve.Loopback(t, srv)
	var crdDirs []string
	if crds {
		dir, err := stack.PrometheusOperatorCRDDir()
		if err != nil {
			t.Fatal(err)
		}
		crdDirs = append(crdDirs, dir)
	}
	cp := stack.NewTestControlPlane(t, stack.ControlPlaneOptions{
		CRDDirectories: crdDirs,
		AuditPolicy:    []byte(requestLevelPolicy),
		AuditWebhook: &stack.AuditWebhook{
			URL: "https://" + addr + exporter.WebhookPath, CAData: ca.CertPEM(),
			ClientCertData: client.CertPEM, ClientKeyData: client.KeyPEM,
		},
		ExtraAPIServerArgs: apiFlags,
	})
	return reg, cp
}

// burst creates burstSize ConfigMaps of 80 KiB as fast as it can.
func burst(ctx context.Context, t *testing.T, cp *stack.ControlPlane) {
	t.Helper()
	cfg := cp.AdminConfig()
	cfg.QPS, cfg.Burst = 1000, 1000
	client := kubernetes.NewForConfigOrDie(cfg)
	value := strings.Repeat("x", 80<<10)
	var wg sync.WaitGroup
	errs := make(chan error, burstSize)
	next := make(chan int, burstSize)
	for i := range burstSize {
		next <- i
	}
	close(next)
	start := time.Now()
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("payload-", i)}, Data: map[string]string{"v": value}}
				if _, err := client.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("Created %d ConfigMaps of 80 KiB in %s", burstSize, time.Since(start).Round(time.Millisecond))
}

func refused(t *testing.T, reg *prometheus.Registry) float64 {
	total := 0.0
	for _, m := range family(t, reg, "loopwatch_audit_requests_total").GetMetric() {
		if labelValue(m, "outcome") == "rejected" {
			total += m.GetCounter().GetValue()
		}
	}
	return total
}

func tooLarge(t *testing.T, reg *prometheus.Registry) float64 {
	for _, m := range family(t, reg, "loopwatch_audit_requests_total").GetMetric() {
		if labelValue(m, "reason") == "too_large" {
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

func deploymentOf(t *testing.T) (d appsv1.Deployment) {
	t.Helper()
	b, err := os.ReadFile("exporter.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range bytes.Split(b, []byte("\n---\n")) {
		if bytes.Contains(doc, []byte("kind: Deployment")) {
			if err := yaml.Unmarshal(doc, &d); err != nil {
				t.Fatal(err)
			}
		}
	}
	return d
}

// createManifests creates every object of exporter.yaml, refusing unknown fields.
func createManifests(ctx context.Context, t *testing.T, client dynamic.Interface) {
	t.Helper()
	b, err := os.ReadFile("exporter.yaml")
	if err != nil {
		t.Fatal(err)
	}
	resources := map[string]schema.GroupVersionResource{
		"Namespace":           {Version: "v1", Resource: "namespaces"},
		"Deployment":          {Group: "apps", Version: "v1", Resource: "deployments"},
		"Service":             {Version: "v1", Resource: "services"},
		"ServiceMonitor":      {Group: "monitoring.coreos.com", Version: "v1", Resource: "servicemonitors"},
		"PodDisruptionBudget": {Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"},
		"ServiceAccount":      {Version: "v1", Resource: "serviceaccounts"},
		"Role":                {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"},
		"RoleBinding":         {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
	}
	for _, doc := range bytes.Split(b, []byte("\n---\n")) {
		var obj unstructured.Unstructured
		if err := yaml.Unmarshal(doc, &obj.Object); err != nil {
			t.Fatal(err)
		}
		gvr, ok := resources[obj.GetKind()]
		if !ok {
			t.Fatalf("no resource for kind %q", obj.GetKind())
		}
		var ri dynamic.ResourceInterface = client.Resource(gvr)
		if ns := obj.GetNamespace(); ns != "" {
			ri = client.Resource(gvr).Namespace(ns)
		}
		if _, err := ri.Create(ctx, &obj, metav1.CreateOptions{FieldValidation: "Strict"}); err != nil {
			t.Errorf("%s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
	}
}

func creates(t *testing.T, reg *prometheus.Registry) float64 {
	total := 0.0
	for _, m := range family(t, reg, "loopwatch_audit_writes_total").GetMetric() {
		if labelValue(m, "verb") == "create" && labelValue(m, "resource") == "configmaps" {
			total += m.GetCounter().GetValue()
		}
	}
	return total
}

func family(t *testing.T, reg *prometheus.Registry, name string) *dto.MetricFamily {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			return f
		}
	}
	return &dto.MetricFamily{}
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
