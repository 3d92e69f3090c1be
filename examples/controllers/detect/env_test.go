package detect_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1 "github.com/loopwatch/loopwatch/examples/controllers/conditions/api/v1"
	batchv1ex "github.com/loopwatch/loopwatch/examples/controllers/scheduler/api/v1"
	"github.com/loopwatch/loopwatch/exporter"
	"github.com/loopwatch/loopwatch/gen"
	"github.com/loopwatch/loopwatch/internal/demo"
	"github.com/loopwatch/loopwatch/internal/proc"
	"github.com/loopwatch/loopwatch/internal/serve"
	"github.com/loopwatch/loopwatch/internal/stack"
	backupv1 "github.com/loopwatch/loopwatch/operator/api/v1alpha1"
)

// Scrape jobs of the processes.
const (
	exporterJob  = "loopwatch-exporter"
	apiserverJob = "apiserver"
)

// env is the running control plane, exporter and Prometheus.
type env struct {
	dir      string
	bin      string
	cp       *stack.ControlPlane
	prom     *stack.Prometheus
	kube     client.Client
	scheme   *runtime.Scheme
	exporter stack.ScrapeTarget
	// generated holds the files generated with the rules Prometheus runs, dashboards included.
	generated []gen.File
}

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(batchv1ex.AddToScheme(s))
	utilruntime.Must(configv1.AddToScheme(s))
	utilruntime.Must(backupv1.AddToScheme(s))
	return s
}

// startEnv starts the loopwatch exporter in this process (the real webhook server, over TLS,
// the API server authenticating with a client certificate) and a control plane whose audit
// webhook posts to it, with the examples' and the operator's CRDs.
func startEnv(t *testing.T, dir string) *env {
	t.Helper()
	bin, err := stack.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	e := &env{dir: dir, bin: bin, scheme: newScheme()}
	webhook := e.startExporter(t)
	root := filepath.Join(bin, "..")
	e.cp = stack.NewTestControlPlane(t, stack.ControlPlaneOptions{
		CRDDirectories: []string{
			filepath.Join(root, "examples", "controllers", "config", "crd"),
			filepath.Join(root, "operator", "config", "crd", "bases"),
		},
		AuditWebhook: webhook,
	})
	e.kube, err = client.New(e.cp.AdminConfig(), client.Options{Scheme: e.scheme})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) startExporter(t *testing.T) *stack.AuditWebhook {
	t.Helper()
	ca, err := stack.NewCertAuthority("detect-exporter-ca")
	if err != nil {
		t.Fatal(err)
	}
	serving, err := ca.Serving("loopwatch-exporter")
	if err != nil {
		t.Fatal(err)
	}
	apiserver, err := ca.Client("kube-apiserver-audit")
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile, err := serving.Write(e.dir, "exporter")
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(e.dir, "exporter-ca.crt")
	if err := os.WriteFile(caFile, ca.CertPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	logger := slog.New(slog.DiscardHandler)
	x, err := exporter.New(exporter.Config{Registerer: reg, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := exporter.NewServer(exporter.ServerConfig{
		Addr: "127.0.0.1:0", TLSCertFile: certFile, TLSKeyFile: keyFile, ClientCAFile: caFile, Gatherer: reg, Logger: logger,
	}, x)
	if err != nil {
		t.Fatal(err)
	}
	addr := serve.Loopback(t, srv)
	// The exporter's /metrics names users and objects: Prometheus presents a client
	// certificate of the CA the exporter trusts, as the API server does.
	scraper, err := ca.Client("prometheus")
	if err != nil {
		t.Fatal(err)
	}
	scraperCert, scraperKey, err := scraper.Write(e.dir, "prometheus-client")
	if err != nil {
		t.Fatal(err)
	}
	e.exporter = stack.ScrapeTarget{
		Job: exporterJob, Addresses: []string{addr}, Scheme: "https",
		TLS:    &stack.TLSFiles{CAFile: caFile, CertFile: scraperCert, KeyFile: scraperKey},
		Labels: map[string]string{"namespace": "monitoring", "pod": "loopwatch-exporter-0"},
	}
	return &stack.AuditWebhook{URL: "https://" + addr + exporter.WebhookPath, CAData: ca.CertPEM(),
		ClientCertData: apiserver.CertPEM, ClientKeyData: apiserver.KeyPEM}
}

// rulesConfig is the demo's generator config — production expressions and thresholds, `for`
// shortened to 20s, 2s evaluation — with selectors for the jobs of this test.
func rulesConfig(jobs []string) gen.Config {
	cfg := demo.Config()
	sel := `job=~"`
	for i, j := range jobs {
		if i > 0 {
			sel += "|"
		}
		sel += j
	}
	sel += `"`
	cfg.Selectors.Controller = sel
	cfg.Selectors.ControllerTargets = sel
	cfg.Selectors.Exporter = `job="` + exporterJob + `"`
	return cfg
}

// startPrometheus loads the rules generated from cfg and scrapes targets, the exporter and the
// API server.
func (e *env) startPrometheus(t *testing.T, cfg gen.Config, targets []stack.ScrapeTarget) {
	t.Helper()
	m, err := gen.Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	files, err := m.Files()
	if err != nil {
		t.Fatal(err)
	}
	e.generated = files
	rulesDir := filepath.Join(e.dir, "rules")
	if err := gen.WriteFiles(rulesDir, files); err != nil {
		t.Fatal(err)
	}
	apiserver, err := e.cp.ScrapeTarget(apiserverJob)
	if err != nil {
		t.Fatal(err)
	}
	e.prom = stack.NewTestPrometheus(t, stack.PrometheusOptions{
		RuleFiles: []string{filepath.Join(rulesDir, gen.RulesFile)}, OneEvaluationInterval: true,
		Targets: append(append(targets, e.exporter), apiserver),
	})
}

// identity returns the rest.Config of a ServiceAccount with cluster-admin rights, its token bound
// to a (Pending) pod when pod is not empty, so audit events name the pod as a deployed
// controller's would.
func (e *env) identity(ctx context.Context, namespace, sa, pod string) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if pod != "" {
		cfg, err = e.cp.PodConfig(ctx, namespace, sa, pod)
	} else {
		cfg, err = e.cp.ServiceAccountConfig(ctx, namespace, sa)
	}
	if err != nil {
		return nil, err
	}
	return cfg, e.cp.GrantClusterAdmin(ctx, stack.ServiceAccountSubject(namespace, sa))
}

// logDir returns a new directory for the processes' logs and files: removed when the test
// passes, kept and named in the test's log when it fails.
func logDir(t *testing.T, pattern string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("controller logs kept in %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	return dir
}

// waitMetrics waits until a process serves /metrics at addr.
func waitMetrics(ctx context.Context, p *proc.Process, addr string) error {
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if ended, err := p.Exited(); ended {
			return fmt.Errorf("%s exited: %v (log %s)", p.Name, err, p.Log)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s serves no /metrics at %s after 90s (log %s)", p.Name, addr, p.Log)
}
