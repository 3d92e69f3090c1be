// Package deploy_test checks the deploy files: the audit policies load in the API server's own
// policy reader and select what the exporter needs, the webhook kubeconfig parses, and the
// manifests decode into their types with flags the exporter command accepts.
package deploy_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/apiserver/pkg/audit/policy"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/loopwatch/loopwatch/exporter/cli"
)

func attrs(verb, group, resource, subresource string) authorizer.Attributes {
	return authorizer.AttributesRecord{
		User: &user.DefaultInfo{Name: "system:serviceaccount:ns:ctl"}, Verb: verb, APIGroup: group,
		Resource: resource, Subresource: subresource, Namespace: "ns", Name: "x", ResourceRequest: true,
	}
}

func TestAuditPoliciesSelectWhatTheExporterNeeds(t *testing.T) {
	nonResource := authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "u"}, Verb: "get", Path: "/healthz"}
	cases := []struct {
		name  string
		attrs authorizer.Attributes
		write auditinternal.Level // level in audit-policy.yaml
		reads auditinternal.Level // level in audit-policy-reads.yaml
	}{
		{"records patches of deployments", attrs("patch", "apps", "deployments", ""), auditinternal.LevelMetadata, auditinternal.LevelMetadata},
		{"records status updates", attrs("update", "apps", "deployments", "status"), auditinternal.LevelMetadata, auditinternal.LevelMetadata},
		{"records creates and deletes", attrs("delete", "", "configmaps", ""), auditinternal.LevelMetadata, auditinternal.LevelMetadata},
		{"drops lease renewals", attrs("update", "coordination.k8s.io", "leases", ""), auditinternal.LevelNone, auditinternal.LevelNone},
		{"drops event writes", attrs("create", "", "events", ""), auditinternal.LevelNone, auditinternal.LevelNone},
		{"drops gets", attrs("get", "", "configmaps", ""), auditinternal.LevelNone, auditinternal.LevelNone},
		{"records lists only in the reads policy", attrs("list", "", "pods", ""), auditinternal.LevelNone, auditinternal.LevelMetadata},
		{"records watches only in the reads policy", attrs("watch", "", "pods", ""), auditinternal.LevelNone, auditinternal.LevelMetadata},
		{"drops non-resource urls", nonResource, auditinternal.LevelNone, auditinternal.LevelNone},
	}
	writes, err := policy.LoadPolicyFromFile("audit-policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	reads, err := policy.LoadPolicyFromFile("audit-policy-reads.yaml")
	if err != nil {
		t.Fatal(err)
	}
	we, re := policy.NewPolicyRuleEvaluator(writes), policy.NewPolicyRuleEvaluator(reads)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := we.EvaluatePolicyRule(tc.attrs).Level; got != tc.write {
				t.Errorf("audit-policy.yaml: level %s, want %s", got, tc.write)
			}
			if got := re.EvaluatePolicyRule(tc.attrs).Level; got != tc.reads {
				t.Errorf("audit-policy-reads.yaml: level %s, want %s", got, tc.reads)
			}
		})
	}
}

func TestWebhookKubeconfigUsesAClientCertificate(t *testing.T) {
	cfg, err := clientcmd.LoadFromFile("webhook-kubeconfig.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil {
		t.Fatalf("current context %q missing", cfg.CurrentContext)
	}
	cluster, auth := cfg.Clusters[ctx.Cluster], cfg.AuthInfos[ctx.AuthInfo]
	if cluster == nil || !strings.HasPrefix(cluster.Server, "https://") || !strings.HasSuffix(cluster.Server, "/audit") || cluster.CertificateAuthority == "" {
		t.Errorf("cluster %+v: want an https server ending in /audit with a CA", cluster)
	}
	if auth == nil || auth.ClientCertificate == "" || auth.ClientKey == "" {
		t.Errorf("user %+v: want a client certificate and key", auth)
	}
}

func TestExporterManifestsDecode(t *testing.T) {
	b, err := os.ReadFile("exporter.yaml")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, doc := range bytes.Split(b, []byte("\n---\n")) {
		var meta struct{ Kind string }
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatal(err)
		}
		kinds[meta.Kind] = true
		switch meta.Kind {
		case "Deployment":
			var d appsv1.Deployment
			if err := yaml.UnmarshalStrict(doc, &d); err != nil {
				t.Fatalf("deployment: %v", err)
			}
			args := d.Spec.Template.Spec.Containers[0].Args
			if args[0] != "exporter" {
				t.Fatalf("first arg %q, want the exporter subcommand", args[0])
			}
			if err := cli.NewExporterCommand().Flags().Parse(args[1:]); err != nil {
				t.Errorf("deployment args are not accepted by the exporter command: %v", err)
			}
		case "Service":
			var s corev1.Service
			if err := yaml.UnmarshalStrict(doc, &s); err != nil {
				t.Fatalf("service: %v", err)
			}
		}
	}
	for _, k := range []string{"Namespace", "Deployment", "Service", "ServiceMonitor"} {
		if !kinds[k] {
			t.Errorf("exporter.yaml has no %s", k)
		}
	}
}
