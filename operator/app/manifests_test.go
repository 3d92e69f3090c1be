package app

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"
)

// kustomization is the part of a kustomization.yaml the manifests use.
type kustomization struct {
	Resources []string `json:"resources"`
}

// loadKustomization reads the objects of a kustomization tree (resources
// only: files and directories), in order.
func loadKustomization(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatalf("read kustomization: %v", err)
	}
	var k kustomization
	// Fields other than resources (images, ...) are not needed here.
	if err := sigsyaml.Unmarshal(data, &k); err != nil {
		t.Fatalf("parse %s/kustomization.yaml: %v", dir, err)
	}
	var objs []*unstructured.Unstructured
	for _, r := range k.Resources {
		p := filepath.Join(dir, r)
		st, err := os.Stat(p)
		if err != nil {
			t.Fatalf("%s lists %q: %v", dir, r, err)
		}
		if st.IsDir() {
			objs = append(objs, loadKustomization(t, p)...)
			continue
		}
		objs = append(objs, loadYAML(t, p)...)
	}
	return objs
}

func loadYAML(t *testing.T, p string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs
			}
			t.Fatalf("decode %s: %v", p, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		objs = append(objs, u)
	}
}

// TestManifestsAreValidAndTheRBACIsEnough applies the kustomize tree to the
// real API server (CRDs and RBAC for real, the rest as a server-side dry run,
// so schemas are checked), then runs the operator as its service account and
// checks that the least-privilege role lets it make a Backup Ready.
func TestManifestsAreValidAndTheRBACIsEnough(t *testing.T) {
	needCluster(t)
	ctx := context.Background()
	objs := loadKustomization(t, filepath.Join("..", "config", "default"))
	if len(objs) == 0 {
		t.Fatal("the default kustomization has no objects")
	}
	// Apply in kustomize's legacy order: namespaces and CRDs before what lives in them.
	sort.SliceStable(objs, func(i, j int) bool { return kindOrder(objs[i].GetKind()) < kindOrder(objs[j].GetKind()) })
	_, err := testClient.RESTMapper().RESTMapping(schema.GroupKind{Group: "monitoring.coreos.com", Kind: "ServiceMonitor"})
	hasMonitoringCRDs := err == nil
	// The tree also holds loopwatch's monitoring (PrometheusRule and dashboard ConfigMaps in
	// "monitoring", the audit exporter in "loopwatch"): create the namespaces objects live in.
	for _, u := range objs {
		if n := u.GetNamespace(); n != "" {
			ns := &corev1.Namespace{}
			ns.Name = n
			if err := testClient.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Errorf("create namespace %s: %v", n, err)
			}
		}
	}
	for _, u := range objs {
		switch u.GetKind() {
		case "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "CustomResourceDefinition":
			if err := testClient.Create(ctx, u); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Errorf("create %s %s: %v", u.GetKind(), u.GetName(), err)
			}
		case "ServiceMonitor", "PrometheusRule":
			if !hasMonitoringCRDs {
				t.Errorf("prometheus-operator CRDs not installed; cannot check %s %s", u.GetKind(), u.GetName())
				continue
			}
			fallthrough
		default:
			if err := testClient.Create(ctx, u, client.DryRunAll); err != nil {
				t.Errorf("dry-run create %s %s: %v", u.GetKind(), u.GetName(), err)
			}
		}
	}

	// Run the operator with the service account's permissions only.
	ns := newNamespace(t, "rbac")
	createAppObjects(t, ns, "shop")
	sa := rest.CopyConfig(testCfg)
	sa.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:backup-system:backup-operator"}
	o := testOptions(t)
	o.LeaderElection = true
	o.LeaderElectionNamespace = "backup-system"
	o.LeaderElectionID = "backup-operator-rbac-test"
	startOperator(t, sa, o)
	b := newBackup(ns, "shop", "shop")
	if err := testClient.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the Backup to be Ready with the operator's RBAC", func() (bool, error) {
		err := testClient.Get(ctx, client.ObjectKeyFromObject(b), b)
		return err == nil && backupReady(b), err
	})
	// The operator must not be able to do more than it needs.
	saClient, err := client.New(sa, client.Options{Scheme: testClient.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{}
	cm.Namespace, cm.Name = ns, "forbidden"
	if err := saClient.Create(ctx, cm); !apierrors.IsForbidden(err) {
		t.Errorf("the operator could create a ConfigMap (err=%v); its role is wider than it needs", err)
	}
	if err := saClient.List(ctx, &rbacv1.RoleList{}); !apierrors.IsForbidden(err) {
		t.Errorf("the operator could list Roles (err=%v)", err)
	}
}

func kindOrder(kind string) int {
	switch kind {
	case "Namespace":
		return 0
	case "CustomResourceDefinition":
		return 1
	case "ServiceAccount", "ClusterRole", "Role":
		return 2
	case "ClusterRoleBinding", "RoleBinding":
		return 3
	default:
		return 4
	}
}
