package stack

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// APIServerOptions configures a further API server of a control plane (AddAPIServer). Its audit
// fields are ControlPlaneOptions'.
type APIServerOptions struct {
	AuditPolicy        []byte
	AuditWebhook       *AuditWebhook
	AuditLog           bool
	ExtraAPIServerArgs []string
	StartTimeout       time.Duration
}

// APIServer is a further kube-apiserver of a control plane: the same etcd, CA and service-account
// keys as the first, so that the same objects, identities and tokens work on both, as behind a
// production control plane's load balancer; its own port, audit backends and logs.
type APIServer struct {
	host         string
	dir          string
	auditLogPath string
	process      *process
}

// AddAPIServer starts one more kube-apiserver on the control plane's etcd and waits until it is
// ready. ControlPlane.Stop stops it first.
func (cp *ControlPlane) AddAPIServer(ctx context.Context, opts APIServerOptions) (*APIServer, error) {
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 90 * time.Second
	}
	bin, err := LookPath("kube-apiserver")
	if err != nil {
		return nil, err
	}
	n := len(cp.more) + 2
	dir := filepath.Join(cp.dir, fmt.Sprintf("apiserver-%d", n))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	serving, err := cp.ca.Serving("kube-apiserver")
	if err != nil {
		return nil, err
	}
	servingCert, servingKey, err := serving.Write(dir, "apiserver")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	audit, auditLog, err := auditArgs(dir, ControlPlaneOptions{AuditPolicy: opts.AuditPolicy, AuditWebhook: opts.AuditWebhook, AuditLog: opts.AuditLog})
	if err != nil {
		return nil, err
	}
	args := apiServerArgs(cp.etcdURL, port, servingCert, servingKey, filepath.Join(cp.dir, "pki", "ca.crt"), cp.saPub, cp.saKey)
	// The first API server keeps the kubernetes Service's endpoints: both advertise 127.0.0.1.
	args = append(args, "--endpoint-reconciler-type=none")
	args = append(args, audit...)
	args = append(args, opts.ExtraAPIServerArgs...)
	p, err := startProcess(fmt.Sprintf("kube-apiserver-%d", n), bin, args, nil, filepath.Join(dir, "kube-apiserver.log"))
	if err != nil {
		return nil, err
	}
	a := &APIServer{host: "https://" + net.JoinHostPort("127.0.0.1", port), dir: dir, auditLogPath: auditLog, process: p}
	cp.more = append(cp.more, a)
	client, err := kubernetes.NewForConfig(a.Config(cp.AdminConfig()))
	if err != nil {
		return nil, p.startError(fmt.Errorf("build admin client: %w", err))
	}
	err = p.waitReady(ctx, opts.StartTimeout, func(ctx context.Context) error {
		_, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err
	})
	return a, err
}

// Host is the API server's URL.
func (a *APIServer) Host() string { return a.host }

// AuditLogPath is its JSON audit log, when asked for.
func (a *APIServer) AuditLogPath() string { return a.auditLogPath }

// Config returns a copy of c (any identity of the control plane) that talks to this API server.
func (a *APIServer) Config(c *rest.Config) *rest.Config {
	c = rest.CopyConfig(c)
	c.Host = a.host
	return c
}

// ScrapeTarget is ControlPlane.ScrapeTarget for this API server (cp is the control plane it was
// added to).
func (a *APIServer) ScrapeTarget(cp *ControlPlane, job string) (ScrapeTarget, error) {
	t, err := cp.ScrapeTarget(job)
	if err != nil {
		return t, err
	}
	t.Addresses = []string{strings.TrimPrefix(a.host, "https://")}
	return t, nil
}

// Stop stops the API server (SIGKILL after a short grace period).
func (a *APIServer) Stop() error { return a.process.stop(5 * time.Second) }
