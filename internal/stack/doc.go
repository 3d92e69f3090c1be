// Package stack starts the real components loopwatch is tested against — etcd, kube-apiserver and
// Prometheus, built from the pinned modules under tools/ into bin/ by `make tools` — on free
// loopback ports, and gives tests typed handles on them.
//
// # Usage
//
// One control plane per test (or per package, from TestMain), identities from it:
//
//	func TestWrites(t *testing.T) {
//		cp := stack.NewTestControlPlane(t, stack.ControlPlaneOptions{AuditWebhook: webhook})
//		cfg, err := cp.PodConfig(ctx, "team-a", "backup-operator", "backup-operator-0")
//		...
//		err = cp.GrantClusterAdmin(ctx, stack.ServiceAccountSubject("team-a", "backup-operator"))
//	}
//
//	func TestMain(m *testing.M) {
//		cp, err := stack.StartControlPlane(context.Background(), opts)
//		if err != nil {
//			log.Fatal(err) // names the binary, its command line and its log file
//		}
//		code := m.Run()
//		if code != 0 {
//			stack.PrintLogs(log.Printf, cp.Logs())
//		}
//		_ = cp.Stop()
//		if code == 0 {
//			_ = os.RemoveAll(cp.Dir())
//		}
//		os.Exit(code)
//	}
//
// # Binaries
//
// The binaries are looked up in $LOOPWATCH_BIN, else in the bin/ directory next to the nearest
// go.mod above the working directory (BinDir). A missing binary is an error telling to run
// `make tools`; the test helpers turn it into t.Fatal, or t.Skip under `go test -short`.
//
//	const BinEnv = "LOOPWATCH_BIN"
//	var ErrMissingBinary                                 // wrapped by every "run `make tools`" error
//	func BinDir() (string, error)
//	func LookPath(name string) (string, error)          // bin/<name>, or an error naming `make tools`
//	func PrometheusOperatorCRDDir() (string, error)     // bin/crds: PrometheusRule + ServiceMonitor CRDs
//	func PrometheusOperatorRunCRDDir() (string, error)  // bin/crds-operator: Prometheus, PodMonitor, Probe CRDs
//	func FreeAddr() (string, error)                     // "127.0.0.1:<free port>" for a test server
//	func HTTPOK(ctx context.Context, client *http.Client, url string) error // GET url, error unless 200
//
// # Control plane
//
// StartControlPlane runs etcd and a kube-apiserver with client-certificate authentication (a CA
// generated per control plane), service-account tokens (signing key + issuer, TokenRequest works
// without kube-controller-manager), RBAC authorization, an optional audit webhook and audit log, and
// installs CRDs from directories. Nothing else runs: no scheduler, no kubelet, no controller
// manager, so Pods stay Pending and namespaces get no default ServiceAccount.
//
//	type ControlPlaneOptions struct {
//		CRDDirectories   []string      // CRD YAML directories installed (and waited for) after start
//		AuditPolicy      []byte        // audit.k8s.io/v1 Policy; nil = DefaultAuditPolicy when auditing
//		AuditWebhook     *AuditWebhook // nil = no webhook backend
//		AuditLog         bool          // also write the JSON log backend to AuditLogPath()
//		ExtraAPIServerArgs []string    // appended to kube-apiserver's command line
//		StartTimeout     time.Duration // per component; default 90s
//	}
//	type AuditWebhook struct {
//		URL            string // the receiver, e.g. an httptest TLS server's URL
//		CAData         []byte // PEM CA that signed the receiver's serving certificate
//		ClientCertData []byte // optional PEM client certificate the API server presents
//		ClientKeyData  []byte // its key
//		Token          string // optional bearer token the API server sends (https only)
//	}
//	func NewCertAuthority(name string) (*CertAuthority, error) // .Serving(name), .Client(user, groups...) -> KeyPair{CertPEM, KeyPEM}.Write(dir, name); .ServingTLS(name) -> *tls.Config; .CertPEM(), .Pool()
//	func ServingCertificate(dir string) (certFile, keyFile string, caPEM []byte, err error) // for a receiver
//	func AuditWebhookFor(srv *httptest.Server) *AuditWebhook // trusts an httptest TLS server
//	const DefaultAuditPolicy // write verbs at Metadata level, leases/events/reads dropped
//
//	func StartControlPlane(ctx context.Context, opts ControlPlaneOptions) (*ControlPlane, error)
//	func NewTestControlPlane(t testing.TB, opts ControlPlaneOptions) *ControlPlane // Fatal/Skip + t.Cleanup
//	func (*ControlPlane) Stop() error      // kube-apiserver first (SIGKILL after a grace period), then etcd
//	func (*ControlPlane) Dir() string      // work dir: logs, certificates, etcd data
//	func (*ControlPlane) Logs() map[string]string // component name -> log file
//	func (*ControlPlane) AuditLogPath() string
//	func (*ControlPlane) Host() string     // https://127.0.0.1:<port>
//	func (*ControlPlane) CAData() []byte   // PEM CA of the serving and client certificates
//
// Identities. Every rest.Config is a fresh copy the caller may modify:
//
//	func (*ControlPlane) AdminConfig() *rest.Config                                  // user "loopwatch-admin" in system:masters
//	func (*ControlPlane) UserConfig(user string, groups ...string) (*rest.Config, error) // client certificate CN=user, O=groups
//	func (*ControlPlane) ServiceAccountConfig(ctx context.Context, namespace, name string) (*rest.Config, error)
//	func (*ControlPlane) PodConfig(ctx context.Context, namespace, serviceAccount, pod string) (*rest.Config, error)
//
// ServiceAccountConfig creates the namespace and ServiceAccount when missing and returns a token from
// the TokenRequest API: audit events name "system:serviceaccount:<ns>:<name>". PodConfig also creates
// a Pod using that ServiceAccount (it stays Pending) and binds the token to it, so audit events carry
// user.extra["authentication.kubernetes.io/pod-name"]: distinct pods of one ServiceAccount are
// distinct replicas. None of these grants anything: a new identity is denied by RBAC (and still
// audited) until a test grants it rights:
//
//	func UserSubject(name string) rbacv1.Subject
//	func ServiceAccountSubject(namespace, name string) rbacv1.Subject
//	func (*ControlPlane) Grant(ctx context.Context, subject rbacv1.Subject, rules ...rbacv1.PolicyRule) error
//	func (*ControlPlane) GrantClusterAdmin(ctx context.Context, subject rbacv1.Subject) error
//	func (*ControlPlane) InstallCRDs(ctx context.Context, dirs ...string) error
//	func (*ControlPlane) ScrapeTarget(job string) (ScrapeTarget, error) // Prometheus scraping kube-apiserver /metrics as admin
//	func WriteKubeconfig(path string, cfg *rest.Config) error // for a process that takes KUBECONFIG
//
// envtest: the same binaries serve sigs.k8s.io/controller-runtime/pkg/envtest when
// KUBEBUILDER_ASSETS points at bin/ (the Makefile exports it; EnvtestAssets returns it for plain `go
// test` runs). A ControlPlane can also back an envtest.Environment{Config: cp.AdminConfig(),
// UseExistingCluster: ptr.To(true)}.
//
//	func EnvtestAssets() (string, error)
//
// # Prometheus
//
// StartPrometheus runs Prometheus with the given rule files and static scrape targets at a short
// scrape and evaluation interval (1s by default):
//
//	type PrometheusOptions struct {
//		RuleFiles          []string
//		Targets            []ScrapeTarget
//		ScrapeInterval     time.Duration // default 1s
//		EvaluationInterval time.Duration // default 1s
//		ScrapeSelf         bool          // also scrape Prometheus' own /metrics as job "prometheus"
//		StartTimeout       time.Duration // default 60s
//		DataDir            string        // TSDB directory (existing blocks); default inside Dir
//		Args               []string      // appended to the command line
//		Env                []string      // added to the inherited environment
//	}
//	type ScrapeTarget struct {
//		Job       string
//		Addresses []string          // host:port
//		Labels    map[string]string // static target labels
//		Scheme    string            // default "http"
//		MetricsPath string          // default /metrics
//		TLS       *TLSFiles         // for https targets
//		BearerTokenFile string
//		Histograms      HistogramIngestion // classic (default), native only, NHCB only
//		MetricRelabelConfigs []map[string]any // metric_relabel_configs, decoded YAML
//	}
//	type TLSFiles struct{ CAFile, CertFile, KeyFile string; InsecureSkipVerify bool }
//
//	func StartPrometheus(ctx context.Context, opts PrometheusOptions) (*Prometheus, error)
//	func NewTestPrometheus(t testing.TB, opts PrometheusOptions) *Prometheus
//	func (*Prometheus) Stop() error
//	func (*Prometheus) URL() string
//	func (*Prometheus) API() promv1.API                       // github.com/prometheus/client_golang/api/prometheus/v1
//	func (*Prometheus) Dir() string
//	func (*Prometheus) Logs() map[string]string
//	func (*Prometheus) Started() time.Time // when the process started
//	func (*Prometheus) Query(ctx context.Context, query string) (model.Vector, error)      // instant query, now
//	func (*Prometheus) WaitForQuery(ctx context.Context, query string) (model.Vector, error) // until non-empty
//	func (*Prometheus) WaitForTargetsUp(ctx context.Context) error
//	func (*Prometheus) WaitForAlert(ctx context.Context, name string, labels map[string]string) (promv1.Alert, error) // until firing
//	func (*Prometheus) WaitForActiveAlert(ctx context.Context, name string, labels map[string]string) (promv1.Alert, error) // pending or firing
//	func (*Prometheus) RuleGroups(ctx context.Context) ([]promv1.RuleGroup, error)
//	func (*Prometheus) WaitForRuleEvaluations(ctx context.Context, n int) error // every group evaluated ≥ n times
//	func (*Prometheus) RuleHealth(ctx context.Context) error // joined errors: lastError, unhealthy rules, evaluation failures
//	func (*Prometheus) EvaluationFailures(ctx context.Context) (map[string]float64, error) // prometheus_rule_evaluation_failures_total by rule_group
//	func (*Prometheus) Metrics(ctx context.Context) (map[string]*dto.MetricFamily, error)  // its own /metrics, parsed
//	func (*Prometheus) Reload(ctx context.Context) error                                    // POST /-/reload
//
// # prometheus-operator
//
// StartPrometheusOperator runs the operator against a control plane (with the CRDs of
// PrometheusOperatorCRDDir and PrometheusOperatorRunCRDDir installed). Without kubelet or
// scheduler it still writes each Prometheus' rule ConfigMaps, which is what the tests read:
//
//	type PrometheusOperatorOptions struct {
//		Args         []string      // appended to the command line
//		StartTimeout time.Duration // default 60s
//	}
//	func StartPrometheusOperator(ctx context.Context, cp *ControlPlane, opts PrometheusOperatorOptions) (*PrometheusOperator, error)
//	func NewTestPrometheusOperator(t testing.TB, cp *ControlPlane, opts PrometheusOperatorOptions) *PrometheusOperator
//	func (*PrometheusOperator) Stop() error
//	func (*PrometheusOperator) URL() string
//	func (*PrometheusOperator) Logs() map[string]string
//	func (*PrometheusOperator) ManagedResources(ctx context.Context, resource string) (map[string]float64, error) // by state
//
// # Failures and teardown
//
// A component that fails to start returns a *StartError naming the binary, its command line and
// its log file:
//
//	type StartError struct{ Binary string; Args []string; LogFile string; Err error }
//	func PrintLogs(logf func(format string, args ...any), logs map[string]string) // for TestMain users
//
// The test helpers stop everything in t.Cleanup; when the test failed the work directory is kept
// and its log files are printed (path and last lines), otherwise it is removed.
// Child processes get SIGKILL if the test binary dies (Pdeathsig), so none is left behind.
package stack
