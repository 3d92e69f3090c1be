package instrument

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/loopwatch/loopwatch/catalogue"
)

// The wrapped client here is controller-runtime's in-memory client: these
// tests check the counting, not the API server (the operator's envtest suite
// runs the same wrapper against a real one).

func TestClientCountsCallsByVerbAndAccess(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}
	inner := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(cm).WithStatusSubresource(&corev1.Pod{}).Build()
	c := NewClient("backup", inner, m)
	ctx := context.Background()

	got := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), got); err != nil {
		t.Fatal(err)
	}
	if err := c.List(ctx, &corev1.ConfigMapList{}); err != nil {
		t.Fatal(err)
	}
	orig := got.DeepCopy()
	got.Data = map[string]string{"k": "v"}
	if err := c.Patch(ctx, got, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	if err := c.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	porig := pod.DeepCopy()
	pod.Status.Phase = corev1.PodRunning
	if err := c.Status().Patch(ctx, pod, client.MergeFrom(porig)); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, pod); err != nil {
		t.Fatal(err)
	}

	want := `
# HELP loopwatch_controller_api_requests_total ` + catalogue.ControllerAPIRequestsTotal.Help + `
# TYPE loopwatch_controller_api_requests_total counter
loopwatch_controller_api_requests_total{access="read",controller="backup",verb="get"} 1
loopwatch_controller_api_requests_total{access="read",controller="backup",verb="list"} 1
loopwatch_controller_api_requests_total{access="write",controller="backup",verb="create"} 1
loopwatch_controller_api_requests_total{access="write",controller="backup",verb="delete"} 1
loopwatch_controller_api_requests_total{access="write",controller="backup",verb="deletecollection"} 0
loopwatch_controller_api_requests_total{access="write",controller="backup",verb="patch"} 1
loopwatch_controller_api_requests_total{access="write",controller="backup",verb="status_patch"} 1
loopwatch_controller_api_requests_total{access="write",controller="backup",verb="status_update"} 0
loopwatch_controller_api_requests_total{access="write",controller="backup",verb="update"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), catalogue.ControllerAPIRequestsTotal.Name); err != nil {
		t.Error(err)
	}
}

type patchingReconciler struct{ c client.Client }

func (r patchingReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	cm := &corev1.ConfigMap{}
	if err := r.c.Get(ctx, req.NamespacedName, cm); err != nil {
		return reconcile.Result{}, err
	}
	orig := cm.DeepCopy()
	cm.Annotations = map[string]string{"touched": "yes"}
	return reconcile.Result{}, r.c.Patch(ctx, cm, client.MergeFrom(orig))
}

func TestTallyRecordsTheCallsOfOneReconcile(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}
	inner := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(cm).Build()
	r := Reconciler("cm", inner, nil, func(c client.Client) reconcile.Reconciler { return patchingReconciler{c: c} })
	ctx, tally := WithTally(context.Background())
	if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(cm)}); err != nil {
		t.Fatal(err)
	}
	calls := tally.Calls()
	if len(calls) != 2 || tally.Reads() != 1 || len(tally.Writes()) != 1 {
		t.Fatalf("calls = %v, want one get and one patch", calls)
	}
	w := tally.Writes()[0]
	if w.Kind != "ConfigMap" || w.Namespace != "ns" || w.Name != "c" || !strings.Contains(w.Patch, "touched") {
		t.Errorf("write = %+v, want a patch of ConfigMap ns/c naming the annotation", w)
	}
	if got := w.String(); !strings.HasPrefix(got, "patch ConfigMap ns/c {") {
		t.Errorf("String() = %q", got)
	}
}
