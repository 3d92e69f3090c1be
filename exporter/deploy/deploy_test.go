// Package deploy_test checks the deploy files: the audit policies load in the API server's own
// policy reader and select what the exporter needs, the webhook kubeconfig parses, and the
// manifests decode into their types with flags the exporter command accepts.
package deploy_test

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/apiserver/pkg/audit/policy"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/loopwatch/loopwatch/exporter"
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
	var deployment appsv1.Deployment
	var monitor serviceMonitor
	var pdb policyv1.PodDisruptionBudget
	var role rbacv1.Role
	var binding rbacv1.RoleBinding
	for _, doc := range bytes.Split(b, []byte("\n---\n")) {
		var meta struct{ Kind string }
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatal(err)
		}
		kinds[meta.Kind] = true
		switch meta.Kind {
		case "Deployment":
			if err := yaml.UnmarshalStrict(doc, &deployment); err != nil {
				t.Fatalf("deployment: %v", err)
			}
		case "Service":
			var s corev1.Service
			if err := yaml.UnmarshalStrict(doc, &s); err != nil {
				t.Fatalf("service: %v", err)
			}
		case "ServiceMonitor":
			if err := yaml.Unmarshal(doc, &monitor); err != nil {
				t.Fatalf("servicemonitor: %v", err)
			}
		case "PodDisruptionBudget":
			if err := yaml.UnmarshalStrict(doc, &pdb); err != nil {
				t.Fatalf("poddisruptionbudget: %v", err)
			}
		case "Role":
			if err := yaml.UnmarshalStrict(doc, &role); err != nil {
				t.Fatalf("role: %v", err)
			}
		case "RoleBinding":
			if err := yaml.UnmarshalStrict(doc, &binding); err != nil {
				t.Fatalf("rolebinding: %v", err)
			}
		}
	}
	for _, k := range []string{"Namespace", "Deployment", "Service", "ServiceMonitor", "PodDisruptionBudget", "ServiceAccount", "Role", "RoleBinding"} {
		if !kinds[k] {
			t.Errorf("exporter.yaml has no %s", k)
		}
	}
	opts := exporterOptions(t, deployment)
	pod := deployment.Spec.Template.Spec
	t.Run("the ServiceMonitor presents the token /metrics takes", func(t *testing.T) {
		if opts.Server.MetricsOpen || opts.Server.MetricsTokenFile == "" {
			t.Fatalf("/metrics open %v, scrape token file %q: want it authenticated by a token", opts.Server.MetricsOpen, opts.Server.MetricsTokenFile)
		}
		secret := secretMountedAt(t, pod, filepath.Dir(opts.Server.MetricsTokenFile))
		if len(monitor.Spec.Endpoints) != 1 {
			t.Fatalf("%d endpoints", len(monitor.Spec.Endpoints))
		}
		auth := monitor.Spec.Endpoints[0].Authorization
		if auth.Type != "Bearer" || auth.Credentials.Name != secret || auth.Credentials.Key != filepath.Base(opts.Server.MetricsTokenFile) {
			t.Fatalf("ServiceMonitor authorization %+v, want Bearer from secret %q key %q", auth, secret, filepath.Base(opts.Server.MetricsTokenFile))
		}
	})
	t.Run("the replicas' settings hold together", func(t *testing.T) {
		if !opts.Exporter.Replicas {
			t.Fatal("the exporter runs without --leader-elect")
		}
		spec := deployment.Spec
		if spec.Replicas == nil || *spec.Replicas < 2 {
			t.Fatalf("replicas %v, want at least 2", spec.Replicas)
		}
		ru := spec.Strategy.RollingUpdate
		if spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || ru == nil || ru.MaxUnavailable.IntValue() != 0 || ru.MaxSurge.IntValue() < 1 {
			t.Fatalf("strategy %+v: want a rolling update that starts a new replica before it stops an old one", spec.Strategy)
		}
		if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() < 1 || pdb.Spec.MinAvailable.IntValue() >= int(*spec.Replicas) ||
			!reflect.DeepEqual(pdb.Spec.Selector.MatchLabels, spec.Selector.MatchLabels) {
			t.Fatalf("disruption budget %+v: want at least one of the Deployment's replicas kept, one evictable", pdb.Spec)
		}
		if pod.ServiceAccountName == "" || binding.RoleRef.Name != role.Name || len(binding.Subjects) != 1 || binding.Subjects[0].Name != pod.ServiceAccountName {
			t.Fatalf("service account %q, binding %+v of role %q: want the pod's account bound to the role", pod.ServiceAccountName, binding, role.Name)
		}
		lease := flagValue(t, deployment, "--lease-name")
		var get, create bool
		for _, r := range role.Rules {
			if !slices.Equal(r.APIGroups, []string{"coordination.k8s.io"}) || !slices.Equal(r.Resources, []string{"leases"}) {
				t.Fatalf("role rule %+v is not about leases: the exporter needs nothing else", r)
			}
			get = get || slices.Contains(r.Verbs, "get") && slices.Contains(r.Verbs, "update") && slices.Contains(r.ResourceNames, lease)
			create = create || slices.Contains(r.Verbs, "create")
		}
		if !get || !create {
			t.Fatalf("role %+v: want create, and get and update of lease %q", role.Rules, lease)
		}
		for _, env := range []string{"POD_NAME", "POD_NAMESPACE", "POD_IP"} {
			if !slices.ContainsFunc(pod.Containers[0].Env, func(e corev1.EnvVar) bool { return e.Name == env && e.ValueFrom != nil }) {
				t.Errorf("the container lacks %s from the downward API", env)
			}
		}
		grace := time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second
		if shutdown := opts.Server.ShutdownTimeout + exporter.DefaultAckTimeout + flagDuration(t, deployment, "--lease-renew-deadline"); grace <= shutdown {
			t.Fatalf("termination grace %s, want more than the step down, the lease's release and the shutdown (%s)", grace, shutdown)
		}
		if probe := pod.Containers[0].ReadinessProbe; probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != "/readyz" {
			t.Fatalf("readiness probe %+v: want /readyz (the leader, or a standby in step with it)", probe)
		}
	})
	t.Run("the memory limit is above the exporter's memory bound", func(t *testing.T) {
		bound, err := exporter.MemoryBound(opts.Exporter, opts.Server)
		if err != nil {
			t.Fatal(err)
		}
		limit := pod.Containers[0].Resources.Limits.Memory().Value()
		if limit < bound.Total()*5/4 {
			t.Fatalf("memory limit %d bytes, bound %d: want a quarter of headroom for the runtime", limit, bound.Total())
		}
	})
}

// serviceMonitor is the part of a monitoring.coreos.com/v1 ServiceMonitor the test reads (the
// real API server checks the whole against the CRD in TestDeployFilesOnTheRealAPIServer).
type serviceMonitor struct {
	Spec struct {
		Endpoints []struct {
			Authorization struct {
				Type        string
				Credentials struct{ Name, Key string }
			}
		}
	}
}

// exporterOptions parses the exporter container's arguments as the command does.
func exporterOptions(t *testing.T, d appsv1.Deployment) cli.ExporterOptions {
	t.Helper()
	args := d.Spec.Template.Spec.Containers[0].Args
	if args[0] != "exporter" {
		t.Fatalf("first arg %q, want the exporter subcommand", args[0])
	}
	opts, err := cli.ParseExporterArgs(args[1:])
	if err != nil {
		t.Fatalf("deployment args are not accepted by the exporter command: %v", err)
	}
	return opts
}

// flagValue returns the value of the exporter container's flag name (--name=value).
func flagValue(t *testing.T, d appsv1.Deployment, name string) string {
	t.Helper()
	for _, a := range d.Spec.Template.Spec.Containers[0].Args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	t.Fatalf("the exporter container has no %s", name)
	return ""
}

func flagDuration(t *testing.T, d appsv1.Deployment, name string) time.Duration {
	t.Helper()
	v, err := time.ParseDuration(flagValue(t, d, name))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

// secretMountedAt returns the name of the secret mounted at dir in the exporter container.
func secretMountedAt(t *testing.T, pod corev1.PodSpec, dir string) string {
	t.Helper()
	for _, m := range pod.Containers[0].VolumeMounts {
		if m.MountPath != dir {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name == m.Name && v.Secret != nil {
				return v.Secret.SecretName
			}
		}
	}
	t.Fatalf("no secret mounted at %s", dir)
	return ""
}

// kubeadmAudit is the part of kubeadm-apiserver-audit.yaml the test reads.
type kubeadmAudit struct {
	APIVersion, Kind string
	APIServer        struct {
		ExtraArgs []struct{ Name, Value string } `json:"extraArgs"`
	} `json:"apiServer"`
}

// apiServerAuditArgs returns the kube-apiserver flags of kubeadm-apiserver-audit.yaml, as
// --name=value.
func apiServerAuditArgs(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("kubeadm-apiserver-audit.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg kubeadmAudit
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.APIVersion != "kubeadm.k8s.io/v1beta4" || cfg.Kind != "ClusterConfiguration" {
		t.Fatalf("%s %s, want a kubeadm.k8s.io/v1beta4 ClusterConfiguration", cfg.APIVersion, cfg.Kind)
	}
	var args []string
	for _, a := range cfg.APIServer.ExtraArgs {
		args = append(args, "--"+a.Name+"="+a.Value)
	}
	return args
}

// TestAPIServerFlagsKeepBatchesBelowTheExporterLimit checks that the deploy file's API server
// flags turn truncation on and keep every batch (in bytes and in events) within what the
// exporter's Deployment accepts. (TestDeployFilesOnTheRealAPIServer starts kube-apiserver with
// them: it refuses unknown flags and invalid values.)
func TestAPIServerFlagsKeepBatchesBelowTheExporterLimit(t *testing.T) {
	flags := map[string]string{}
	for _, a := range apiServerAuditArgs(t) {
		name, value, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		flags[name] = value
	}
	number := func(name string) int64 {
		v, err := strconv.ParseInt(flags[name], 10, 64)
		if err != nil {
			t.Fatalf("--%s=%q: %v", name, flags[name], err)
		}
		return v
	}
	b, err := os.ReadFile("exporter.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var deployment appsv1.Deployment
	for _, doc := range bytes.Split(b, []byte("\n---\n")) {
		if bytes.Contains(doc, []byte("kind: Deployment")) {
			if err := yaml.Unmarshal(doc, &deployment); err != nil {
				t.Fatal(err)
			}
		}
	}
	opts := exporterOptions(t, deployment)
	cases := []struct {
		name string
		ok   bool
	}{
		{"batch mode", flags["audit-webhook-mode"] == "batch"},
		{"truncation is on", flags["audit-webhook-truncate-enabled"] == "true"},
		// Batch mode hands the truncating backend one event at a time: it cuts events, it does not
		// split batches. A batch is at most batch-max-size events of max-event-size bytes (plus
		// the list's punctuation).
		{"a batch of the largest events fits the exporter's body limit",
			number("audit-webhook-batch-max-size")*(number("audit-webhook-truncate-max-event-size")+1)+1024 <= opts.Server.MaxBodyBytes},
		{"events are cut below the batch size", number("audit-webhook-truncate-max-event-size") <= number("audit-webhook-truncate-max-batch-size")},
		{"the batch size says the same bound", number("audit-webhook-truncate-max-batch-size") == number("audit-webhook-batch-max-size")*number("audit-webhook-truncate-max-event-size")},
		{"batches hold no more events than the exporter's limit", number("audit-webhook-batch-max-size") <= int64(opts.Exporter.MaxBatchEvents)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.ok {
				t.Fatalf("not so: API server flags %v, exporter max body %d, max events %d", flags, opts.Server.MaxBodyBytes, opts.Exporter.MaxBatchEvents)
			}
		})
	}
}
