package stack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// ControlPlaneOptions configures StartControlPlane. The zero value is a bare API server.
type ControlPlaneOptions struct {
	// CRDDirectories are directories of CRD YAML installed, and waited for, after start.
	CRDDirectories []string
	// AuditPolicy is the audit.k8s.io/v1 Policy used when auditing; nil means DefaultAuditPolicy.
	AuditPolicy []byte
	// AuditWebhook, when set, sends audit batches to a receiver.
	AuditWebhook *AuditWebhook
	// AuditLog also writes audit events as JSON lines to AuditLogPath (the log backend).
	AuditLog bool
	// ExtraAPIServerArgs are appended to kube-apiserver's command line (a later flag wins).
	ExtraAPIServerArgs []string
	// StartTimeout bounds each component's start; default 90s (kube-apiserver is slow on a busy
	// 2-core machine).
	StartTimeout time.Duration
}

// ControlPlane is a running etcd + kube-apiserver pair, and the further API servers added to it.
type ControlPlane struct {
	dir          string
	host         string
	ca           *CertAuthority
	admin        *rest.Config
	auditLogPath string
	etcd         *process
	apiserver    *process
	// etcdURL, saKey and saPub are what further API servers share with the first.
	etcdURL      string
	saKey, saPub string
	more         []*APIServer
}

// adminUser is the identity behind AdminConfig; system:masters bypasses RBAC.
const adminUser = "loopwatch-admin"

// StartControlPlane starts etcd and kube-apiserver on free loopback ports in a new temporary
// directory and waits until the API server is ready and the CRDs are established. The caller
// must Stop it; the directory (logs, certificates, etcd data) is left for the caller to inspect
// or remove (NewTestControlPlane does both).
func StartControlPlane(ctx context.Context, opts ControlPlaneOptions) (cp *ControlPlane, err error) {
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 90 * time.Second
	}
	etcdBin, err := LookPath("etcd")
	if err != nil {
		return nil, err
	}
	apiserverBin, err := LookPath("kube-apiserver")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "loopwatch-controlplane-")
	if err != nil {
		return nil, fmt.Errorf("create control plane directory: %w", err)
	}
	cp = &ControlPlane{dir: dir}
	defer func() {
		if err != nil {
			err = errors.Join(err, cp.Stop())
			cp = nil
		}
	}()

	etcdURL, err := cp.startEtcd(ctx, etcdBin, opts.StartTimeout)
	if err != nil {
		return cp, err
	}
	cp.etcdURL = etcdURL
	if err := cp.startAPIServer(ctx, apiserverBin, etcdURL, opts); err != nil {
		return cp, err
	}
	if len(opts.CRDDirectories) > 0 {
		if err := cp.InstallCRDs(ctx, opts.CRDDirectories...); err != nil {
			return cp, err
		}
	}
	return cp, nil
}

// startEtcd runs a single-member etcd and returns its client URL. fsync is off: test data need
// not survive a crash, and it saves seconds per test on slow disks.
func (cp *ControlPlane) startEtcd(ctx context.Context, bin string, timeout time.Duration) (string, error) {
	clientPort, err := freePort()
	if err != nil {
		return "", err
	}
	peerPort, err := freePort()
	if err != nil {
		return "", err
	}
	clientURL := "http://127.0.0.1:" + clientPort
	peerURL := "http://127.0.0.1:" + peerPort
	args := []string{
		"--name=loopwatch",
		"--data-dir=" + filepath.Join(cp.dir, "etcd-data"),
		"--listen-client-urls=" + clientURL,
		"--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=loopwatch=" + peerURL,
		"--unsafe-no-fsync=true",
		"--log-level=warn",
	}
	p, err := startProcess("etcd", bin, args, nil, filepath.Join(cp.dir, "etcd.log"))
	if err != nil {
		return "", err
	}
	cp.etcd = p
	return clientURL, p.waitReady(ctx, timeout, func(ctx context.Context) error {
		return HTTPOK(ctx, http.DefaultClient, clientURL+"/health")
	})
}

// startAPIServer runs kube-apiserver against etcdURL with client-certificate authentication,
// service-account tokens, RBAC and the requested audit backends, and waits for /readyz.
func (cp *ControlPlane) startAPIServer(ctx context.Context, bin, etcdURL string, opts ControlPlaneOptions) error {
	pki := filepath.Join(cp.dir, "pki")
	if err := os.MkdirAll(pki, 0o700); err != nil {
		return fmt.Errorf("create pki directory: %w", err)
	}
	ca, err := NewCertAuthority("loopwatch-test-ca")
	if err != nil {
		return err
	}
	cp.ca = ca
	caFile := filepath.Join(pki, "ca.crt")
	if err := os.WriteFile(caFile, ca.certPEM, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", caFile, err)
	}
	serving, err := ca.Serving("kube-apiserver")
	if err != nil {
		return err
	}
	servingCert, servingKey, err := serving.Write(pki, "apiserver")
	if err != nil {
		return err
	}
	saKey, saPub, err := serviceAccountKeys(pki)
	if err != nil {
		return err
	}
	cp.saKey, cp.saPub = saKey, saPub
	port, err := freePort()
	if err != nil {
		return err
	}
	cp.host = "https://" + net.JoinHostPort("127.0.0.1", port)
	admin, err := cp.UserConfig(adminUser, "system:masters")
	if err != nil {
		return err
	}
	cp.admin = admin

	audit, auditLog, err := auditArgs(cp.dir, opts)
	if err != nil {
		return err
	}
	cp.auditLogPath = auditLog
	args := apiServerArgs(etcdURL, port, servingCert, servingKey, caFile, saPub, saKey)
	args = append(args, audit...)
	args = append(args, opts.ExtraAPIServerArgs...)
	p, err := startProcess("kube-apiserver", bin, args, nil, filepath.Join(cp.dir, "kube-apiserver.log"))
	if err != nil {
		return err
	}
	cp.apiserver = p
	client, err := kubernetes.NewForConfig(cp.AdminConfig())
	if err != nil {
		return p.startError(fmt.Errorf("build admin client: %w", err))
	}
	return p.waitReady(ctx, opts.StartTimeout, func(ctx context.Context) error {
		_, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err
	})
}

// apiServerArgs is the command line every kube-apiserver of a control plane shares.
func apiServerArgs(etcdURL, port, servingCert, servingKey, caFile, saPub, saKey string) []string {
	return []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + port,
		"--tls-cert-file=" + servingCert,
		"--tls-private-key-file=" + servingKey,
		"--client-ca-file=" + caFile,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + saPub,
		"--service-account-signing-key-file=" + saKey,
		"--service-cluster-ip-range=10.0.0.0/24",
		"--allow-privileged=true",
	}
}

// Stop stops the API servers, then etcd. kube-apiserver gets a short grace period and then
// SIGKILL: once etcd is gone it can hang in shutdown. The directory is kept.
func (cp *ControlPlane) Stop() error {
	var errs []error
	for _, a := range cp.more {
		errs = append(errs, a.Stop())
	}
	if cp.apiserver != nil {
		errs = append(errs, cp.apiserver.stop(5*time.Second))
	}
	if cp.etcd != nil {
		errs = append(errs, cp.etcd.stop(10*time.Second))
	}
	return errors.Join(errs...)
}

// Dir is the control plane's working directory: log files, certificates, audit files, etcd data.
func (cp *ControlPlane) Dir() string { return cp.dir }

// Logs maps each started component's name to its log file.
func (cp *ControlPlane) Logs() map[string]string {
	logs := map[string]string{}
	for _, p := range []*process{cp.etcd, cp.apiserver} {
		if p != nil {
			logs[p.name] = p.logPath
		}
	}
	if cp.auditLogPath != "" {
		logs["audit"] = cp.auditLogPath
	}
	for i, a := range cp.more {
		logs[a.process.name] = a.process.logPath
		if a.auditLogPath != "" {
			logs[fmt.Sprintf("audit-%d", i+2)] = a.auditLogPath
		}
	}
	return logs
}

// AuditLogPath is the JSON audit log when ControlPlaneOptions.AuditLog was set, else "".
func (cp *ControlPlane) AuditLogPath() string { return cp.auditLogPath }

// Host is the API server's URL, https://127.0.0.1:<port>.
func (cp *ControlPlane) Host() string { return cp.host }

// CAData is the PEM CA that signed the API server's serving certificate and every client
// certificate UserConfig issues.
func (cp *ControlPlane) CAData() []byte { return append([]byte(nil), cp.ca.certPEM...) }

// HTTPOK GETs url with client and returns an error unless the answer is 200.
func HTTPOK(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

// ScrapeTarget returns a Prometheus scrape job for kube-apiserver's own /metrics (such as
// apiserver_audit_error_total), authenticating as the admin with files written into Dir.
func (cp *ControlPlane) ScrapeTarget(job string) (ScrapeTarget, error) {
	pki := filepath.Join(cp.dir, "pki")
	certFile, keyFile, err := KeyPair{CertPEM: cp.admin.CertData, KeyPEM: cp.admin.KeyData}.Write(pki, "scraper")
	if err != nil {
		return ScrapeTarget{}, err
	}
	return ScrapeTarget{
		Job:       job,
		Addresses: []string{strings.TrimPrefix(cp.host, "https://")},
		Scheme:    "https",
		TLS:       &TLSFiles{CAFile: filepath.Join(pki, "ca.crt"), CertFile: certFile, KeyFile: keyFile},
	}, nil
}
