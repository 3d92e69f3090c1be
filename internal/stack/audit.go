package stack

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// DefaultAuditPolicy records every write (create, update, patch, delete, deletecollection, their
// subresources included) at Metadata level, once per request (ResponseComplete), and drops
// leader-election lease renewals, events and all reads: the stream the exporter is built for.
const DefaultAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
omitManagedFields: true
rules:
  - level: None
    resources: [{group: "coordination.k8s.io", resources: ["leases"]}]
  - level: None
    resources: [{group: "", resources: ["events"]}, {group: "events.k8s.io", resources: ["events"]}]
  - level: Metadata
    verbs: ["create", "update", "patch", "delete", "deletecollection"]
  - level: None
`

// AuditWebhook aims kube-apiserver's audit webhook backend at a receiver. The API server POSTs
// audit.k8s.io/v1 EventList JSON in batches, at most 1s apart in tests.
type AuditWebhook struct {
	// URL is the receiver's full URL, e.g. "https://127.0.0.1:8443/audit".
	URL string
	// CAData is the PEM CA bundle that verifies the receiver's serving certificate.
	CAData []byte
	// ClientCertData and ClientKeyData are an optional PEM client certificate and key the API
	// server presents to the receiver.
	ClientCertData []byte
	ClientKeyData  []byte
	// Token is an optional bearer token the API server sends. Credentials need an https URL:
	// client-go drops them from a kubeconfig whose server is plain http.
	Token string
}

// AuditWebhookFor aims the audit webhook at an httptest TLS server (httptest.NewTLSServer),
// trusting its self-signed certificate.
func AuditWebhookFor(srv *httptest.Server) *AuditWebhook {
	return &AuditWebhook{URL: srv.URL, CAData: pemBlock("CERTIFICATE", srv.Certificate().Raw)}
}

// writeKubeconfig writes the kubeconfig file the webhook backend reads (--audit-webhook-config-file).
func (w *AuditWebhook) writeKubeconfig(path string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["receiver"] = &clientcmdapi.Cluster{Server: w.URL, CertificateAuthorityData: w.CAData}
	cfg.AuthInfos["kube-apiserver"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: w.ClientCertData,
		ClientKeyData:         w.ClientKeyData,
		Token:                 w.Token,
	}
	cfg.Contexts["audit"] = &clientcmdapi.Context{Cluster: "receiver", AuthInfo: "kube-apiserver"}
	cfg.CurrentContext = "audit"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write audit webhook kubeconfig: %w", err)
	}
	return nil
}

// auditArgs writes the audit policy and webhook config into dir and returns kube-apiserver's
// audit flags; none when neither a webhook nor the log backend is asked for.
func auditArgs(dir string, opts ControlPlaneOptions) (args []string, logPath string, err error) {
	if opts.AuditWebhook == nil && !opts.AuditLog {
		return nil, "", nil
	}
	policy := opts.AuditPolicy
	if policy == nil {
		policy = []byte(DefaultAuditPolicy)
	}
	policyPath := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policyPath, policy, 0o600); err != nil {
		return nil, "", fmt.Errorf("write audit policy: %w", err)
	}
	args = append(args, "--audit-policy-file="+policyPath)
	if w := opts.AuditWebhook; w != nil {
		if w.URL == "" {
			return nil, "", fmt.Errorf("audit webhook: URL is required")
		}
		if !strings.HasPrefix(w.URL, "https://") && (w.Token != "" || len(w.ClientCertData) > 0) {
			return nil, "", fmt.Errorf("audit webhook %q: credentials are only sent over https (client-go drops them for http servers)", w.URL)
		}
		path := filepath.Join(dir, "audit-webhook.kubeconfig")
		if err := w.writeKubeconfig(path); err != nil {
			return nil, "", err
		}
		args = append(args,
			"--audit-webhook-config-file="+path,
			"--audit-webhook-batch-max-wait=1s",
			// Retries start at 10s by default; a test receiver that is briefly down should not
			// delay the next batch that long.
			"--audit-webhook-initial-backoff=1s",
		)
	}
	if opts.AuditLog {
		logPath = filepath.Join(dir, "audit.log")
		args = append(args,
			"--audit-log-path="+logPath,
			"--audit-log-format=json",
			"--audit-log-mode=blocking",
		)
	}
	return args, logPath, nil
}
