package app

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// The suite runs against a real kube-apiserver and etcd (envtest), started
// once in TestMain from KUBEBUILDER_ASSETS (default: the repository's bin/).
var (
	testCfg        *rest.Config
	testClient     client.Client
	testKubeconfig []byte
)

// needCluster skips t when the suite runs without a real API server (-short).
func needCluster(t *testing.T) {
	t.Helper()
	if testCfg == nil {
		t.Skip("needs the real API server the suite starts: not in -short")
	}
}

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		return m.Run() // `make unit`: the tests that need the API server skip (needCluster).
	}
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		bin, err := filepath.Abs(filepath.Join("..", "..", "bin"))
		if err == nil {
			os.Setenv("KUBEBUILDER_ASSETS", bin) //nolint:errcheck // checked by envtest below
		}
	}
	if os.Getenv("OPERATOR_TEST_VERBOSE") != "" {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
	} else {
		ctrl.SetLogger(zap.New(zap.WriteTo(discard{})))
	}
	crdDirs := []string{filepath.Join("..", "config", "crd", "bases")}
	// The prometheus-operator CRDs (ServiceMonitor), when the tools built them.
	if extra := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "crds"); dirExists(extra) {
		crdDirs = append(crdDirs, extra)
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     crdDirs,
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "start envtest (KUBEBUILDER_ASSETS=%s needs kube-apiserver and etcd): %v\n", os.Getenv("KUBEBUILDER_ASSETS"), err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stop envtest: %v\n", err)
		}
	}()
	testCfg = cfg
	testKubeconfig = env.KubeConfig
	scheme, err := NewScheme()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	testClient, err = client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer operator.Remove()
	return m.Run()
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// testOptions are Options for an operator inside a test process.
func testOptions(t *testing.T) Options {
	o := Defaults()
	o.MetricsAddr = "0"
	o.ProbeAddr = "0"
	o.LeaderElection = false
	o.StoreDir = t.TempDir()
	o.SkipNameValidation = true
	o.Registerer = prometheus.NewRegistry()
	o.DeleteTimeout = 5 * time.Second
	o.FinalizerAgeInterval = 500 * time.Millisecond
	o.OrphanInterval = time.Hour
	o.KubeQPS = 1000
	o.KubeBurst = 2000
	return o
}

// requestCounter counts the HTTP requests an operator sends to the API
// server, split into reads and writes; watches are not counted.
type requestCounter struct {
	reads, writes atomic.Int64
}

func (c *requestCounter) wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			switch {
			case r.URL.Query().Get("watch") == "true":
			case r.Method == http.MethodGet:
				c.reads.Add(1)
			default:
				c.writes.Add(1)
			}
			return rt.RoundTrip(r)
		})
	})
	return cfg
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// startOperator builds and starts an operator; it stops when the test ends
// or when the returned stop is called.
func startOperator(t *testing.T, cfg *rest.Config, o Options) (*Operator, func()) {
	t.Helper()
	op, err := New(cfg, o)
	if err != nil {
		t.Fatalf("build operator: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- op.Manager.Start(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("operator stopped with error: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("operator did not stop within 30s")
		}
	}
	t.Cleanup(stop)
	syncCtx, syncCancel := context.WithTimeout(ctx, 30*time.Second)
	defer syncCancel()
	if !op.Manager.GetCache().WaitForCacheSync(syncCtx) {
		t.Fatal("operator cache did not sync")
	}
	return op, stop
}

var nsCounter atomic.Int64

// newNamespace creates a namespace for one test.
func newNamespace(t *testing.T, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", prefix, nsCounter.Add(1))}}
	if err := testClient.Create(context.Background(), ns); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	return ns.Name
}

// eventually polls cond every interval until it returns true or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var lastErr error
	for time.Now().Before(deadline) {
		ok, err := cond()
		if ok {
			return
		}
		lastErr = err
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s (last error: %v)", timeout, what, lastErr)
}

func dirExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
