package app

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loopwatch/loopwatch/catalogue"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// serviceAccountToken creates a service account and returns a token for it.
func serviceAccountToken(t *testing.T, ns, name string) string {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := testClient.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(3600))}}
	if err := testClient.SubResource("token").Create(ctx, sa, tr); err != nil {
		t.Fatalf("request token for %s: %v", name, err)
	}
	return tr.Status.Token
}

// TestMetricsEndpointAuthenticatesAndAuthorizes checks that /metrics is served
// over HTTPS only to callers the API server authenticates and authorizes, and
// that it carries the controller-runtime and instrument metrics. This is the
// only test that registers into controller-runtime's global registry.
func TestMetricsEndpointAuthenticatesAndAuthorizes(t *testing.T) {
	needCluster(t)
	ctx := context.Background()
	ns := newNamespace(t, "metrics")
	addr := freeAddr(t)
	o := testOptions(t)
	o.MetricsAddr = addr
	o.Registerer = nil
	startOperator(t, testCfg, o)
	createAppObjects(t, ns, "shop")
	b := newBackup(ns, "shop", "shop")
	if err := testClient.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the Backup to be Ready", func() (bool, error) {
		n, _, err := countReady(ctx, ns)
		return n == 1, err
	})

	reader := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader-" + ns},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader-" + ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: reader.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "prometheus"}}}
	if err := testClient.Create(ctx, reader); err != nil {
		t.Fatal(err)
	}
	if err := testClient.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	allowed := serviceAccountToken(t, ns, "prometheus")
	denied := serviceAccountToken(t, ns, "stranger")

	httpc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the operator's self-signed test certificate
	}}
	get := func(token string) (int, string, error) {
		req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("https://%s/metrics", addr), nil)
		if err != nil {
			return 0, "", err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := httpc.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	cases := []struct {
		name  string
		token string
		want  int
	}{
		{name: "refuses a caller without a token", want: http.StatusUnauthorized},
		{name: "refuses a caller the API server does not authorize", token: denied, want: http.StatusForbidden},
		{name: "serves a caller allowed to get /metrics", token: allowed, want: http.StatusOK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var code int
			var body string
			eventually(t, 20*time.Second, "the metrics endpoint to answer", func() (bool, error) {
				var err error
				code, body, err = get(c.token)
				return err == nil, err
			})
			if code != c.want {
				t.Fatalf("status %d, want %d", code, c.want)
			}
			if c.want != http.StatusOK {
				return
			}
			for _, name := range []string{catalogue.ControllerAPIRequestsTotal.Name, catalogue.ControllerFinalizerOldestPendingSeconds.Name,
				"controller_runtime_reconcile_total", "workqueue_depth"} {
				if !strings.Contains(body, name) {
					t.Errorf("/metrics lacks %s", name)
				}
			}
		})
	}
}
