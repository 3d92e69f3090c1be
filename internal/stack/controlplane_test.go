package stack_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"slices"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/loopwatch/loopwatch/internal/stack"
)

const (
	testNamespace = "stack-test"
	podNameExtra  = "authentication.kubernetes.io/pod-name"
)

// TestControlPlane starts one control plane with an audit webhook, the audit log and the
// prometheus-operator CRDs, and checks what other packages' tests rely on.
func TestControlPlane(t *testing.T) {
	stack.SkipShort(t)
	crds, err := stack.PrometheusOperatorCRDDir()
	if err != nil && testing.Short() {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	receiver := newAuditReceiver(t)
	cp := stack.NewTestControlPlane(t, stack.ControlPlaneOptions{
		CRDDirectories: []string{crds},
		AuditWebhook:   stack.AuditWebhookFor(receiver.srv),
		AuditLog:       true,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	admin := kubernetes.NewForConfigOrDie(cp.AdminConfig())
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("each identity is authenticated and audited as itself", func(t *testing.T) {
		createConfigMaps := rbacv1.PolicyRule{Verbs: []string{"create"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}
		tests := []struct {
			name     string
			config   func(context.Context) (*rest.Config, error)
			grant    func(context.Context) error
			wantUser string
			wantPod  string
		}{
			{
				name:     "admin",
				config:   func(context.Context) (*rest.Config, error) { return cp.AdminConfig(), nil },
				wantUser: "loopwatch-admin",
			},
			{
				name:     "user",
				config:   func(context.Context) (*rest.Config, error) { return cp.UserConfig("alice", "team-a") },
				grant:    func(ctx context.Context) error { return cp.Grant(ctx, stack.UserSubject("alice"), createConfigMaps) },
				wantUser: "alice",
			},
			{
				name: "service-account",
				config: func(ctx context.Context) (*rest.Config, error) {
					return cp.ServiceAccountConfig(ctx, testNamespace, "backup-operator")
				},
				grant: func(ctx context.Context) error {
					return cp.GrantClusterAdmin(ctx, stack.ServiceAccountSubject(testNamespace, "backup-operator"))
				},
				wantUser: "system:serviceaccount:" + testNamespace + ":backup-operator",
			},
			{
				name: "pod-racer-0",
				config: func(ctx context.Context) (*rest.Config, error) {
					return cp.PodConfig(ctx, testNamespace, "racer", "racer-0")
				},
				grant: func(ctx context.Context) error {
					return cp.GrantClusterAdmin(ctx, stack.ServiceAccountSubject(testNamespace, "racer"))
				},
				wantUser: "system:serviceaccount:" + testNamespace + ":racer",
				wantPod:  "racer-0",
			},
			{
				name: "pod-racer-1",
				config: func(ctx context.Context) (*rest.Config, error) {
					return cp.PodConfig(ctx, testNamespace, "racer", "racer-1")
				},
				wantUser: "system:serviceaccount:" + testNamespace + ":racer",
				wantPod:  "racer-1",
			},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				cfg, err := tc.config(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if tc.grant != nil {
					if err := tc.grant(ctx); err != nil {
						t.Fatal(err)
					}
				}
				client := kubernetes.NewForConfigOrDie(cfg)
				review, err := client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if got := review.Status.UserInfo.Username; got != tc.wantUser {
					t.Errorf("self subject review: username %q, want %q", got, tc.wantUser)
				}
				if got := review.Status.UserInfo.Extra[podNameExtra]; !slices.Equal(got, podExtra(tc.wantPod)) {
					t.Errorf("self subject review: extra %s = %q, want %q", podNameExtra, got, podExtra(tc.wantPod))
				}

				name := "written-by-" + tc.name
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace}}
				if _, err := client.CoreV1().ConfigMaps(testNamespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
				ev, err := receiver.waitFor(waitCtx, configMapCreate(testNamespace, name))
				if err != nil {
					t.Fatal(err)
				}
				if ev.User.Username != tc.wantUser {
					t.Errorf("audit event: username %q, want %q", ev.User.Username, tc.wantUser)
				}
				if got := ev.User.Extra[podNameExtra]; !slices.Equal(got, podExtra(tc.wantPod)) {
					t.Errorf("audit event: extra %s = %q, want %q", podNameExtra, got, podExtra(tc.wantPod))
				}
				if ev.ResponseStatus == nil || ev.ResponseStatus.Code != 201 {
					t.Errorf("audit event: response status %+v, want code 201", ev.ResponseStatus)
				}
			})
		}
	})

	t.Run("an identity without grants is denied and audited with 403", func(t *testing.T) {
		cfg, err := cp.UserConfig("mallory")
		if err != nil {
			t.Fatal(err)
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "denied", Namespace: testNamespace}}
		_, err = kubernetes.NewForConfigOrDie(cfg).CoreV1().ConfigMaps(testNamespace).Create(ctx, cm, metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) {
			t.Fatalf("create as ungranted user: got %v, want Forbidden", err)
		}
		waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		// The request never reaches the handler that reads the name from the body, so the event
		// names the namespace and resource only.
		ev, err := receiver.waitFor(waitCtx, func(e auditEvent) bool {
			return e.User.Username == "mallory" && e.Verb == "create" && e.ObjectRef != nil && e.ObjectRef.Resource == "configmaps"
		})
		if err != nil {
			t.Fatal(err)
		}
		if ev.ResponseStatus == nil || ev.ResponseStatus.Code != 403 || ev.ObjectRef.Namespace != testNamespace {
			t.Errorf("audit event: objectRef %+v status %+v, want %s with 403", ev.ObjectRef, ev.ResponseStatus, testNamespace)
		}
	})

	t.Run("the audit log backend writes the same events as JSON lines", func(t *testing.T) {
		match := configMapCreate(testNamespace, "written-by-admin")
		deadline := time.Now().Add(30 * time.Second)
		for {
			found, err := auditLogHas(cp.AuditLogPath(), match)
			if err != nil {
				t.Fatal(err)
			}
			if found {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("no create of configmap %s/written-by-admin in %s", testNamespace, cp.AuditLogPath())
			}
			time.Sleep(200 * time.Millisecond)
		}
	})

	t.Run("the PrometheusRule CRD schema accepts a valid rule and rejects an invalid one", func(t *testing.T) {
		rules := dynamic.NewForConfigOrDie(cp.AdminConfig()).
			Resource(schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "prometheusrules"}).
			Namespace(testNamespace)
		valid := prometheusRule("valid", map[string]any{"name": "g", "rules": []any{map[string]any{"record": "r:x", "expr": "vector(1)"}}})
		if _, err := rules.Create(ctx, valid, metav1.CreateOptions{}); err != nil {
			t.Errorf("create valid PrometheusRule: %v", err)
		}
		invalid := prometheusRule("invalid", map[string]any{"rules": []any{map[string]any{"record": "r:x", "expr": "vector(1)", "for": "five minutes"}}})
		if _, err := rules.Create(ctx, invalid, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
			t.Errorf("create PrometheusRule without group name and with a bad duration: got %v, want Invalid", err)
		}
	})

	t.Run("prometheus scrapes kube-apiserver metrics as admin", func(t *testing.T) {
		target, err := cp.ScrapeTarget("kube-apiserver")
		if err != nil {
			t.Fatal(err)
		}
		prom := stack.NewTestPrometheus(t, stack.PrometheusOptions{Targets: []stack.ScrapeTarget{target}})
		if err := prom.WaitForTargetsUp(ctx); err != nil {
			t.Fatal(err)
		}
		v, err := prom.WaitForQuery(ctx, `sum(apiserver_audit_event_total{job="kube-apiserver"}) > 0`)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("audit events counted by kube-apiserver: %v", v[0].Value)
	})
}

func podExtra(pod string) []string {
	if pod == "" {
		return nil
	}
	return []string{pod}
}

func prometheusRule(name string, group map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "monitoring.coreos.com/v1",
		"kind":       "PrometheusRule",
		"metadata":   map[string]any{"name": name, "namespace": testNamespace},
		"spec":       map[string]any{"groups": []any{group}},
	}}
}

// auditLogHas reports whether the JSON-lines audit log at path holds an event matching match.
func auditLogHas(path string, match func(auditEvent) bool) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e auditEvent
		// A line still being written does not parse yet; the caller polls again.
		if err := json.Unmarshal(sc.Bytes(), &e); err == nil && match(e) {
			return true, nil
		}
	}
	return false, sc.Err()
}
