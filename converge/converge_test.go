package converge

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// These tests drive the helper with controller-runtime's in-memory client to
// check its own logic; the operator's envtest suite uses it on a real API
// server.

type labeller struct {
	c     client.Client
	value func() string
}

func (l labeller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	cm := &corev1.ConfigMap{}
	if err := l.c.Get(ctx, req.NamespacedName, cm); err != nil {
		return reconcile.Result{}, err
	}
	if cm.Labels["state"] == l.value() {
		return reconcile.Result{}, nil
	}
	orig := cm.DeepCopy()
	cm.Labels = map[string]string{"state": l.value()}
	return reconcile.Result{}, l.c.Patch(ctx, cm, client.MergeFrom(orig))
}

func TestRun(t *testing.T) {
	counter := 0
	cases := []struct {
		name       string
		value      func() string
		wantErr    string
		wantPasses int
	}{
		{name: "passes a reconciler that settles after one write", value: func() string { return "done" }, wantPasses: 2},
		{name: "fails a reconciler that writes on every pass and lists the write", value: func() string {
			counter++
			return strings.Repeat("x", counter)
		}, wantErr: "write: cm ns/c: patch ConfigMap ns/c"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			value := c.value
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}
			cl := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(cm).Build()
			rep, err := Run(context.Background(), Config{
				Client:    cl,
				MaxPasses: 4,
				Settle:    time.Millisecond,
				Targets: []Target{{
					Name: "cm",
					New:  func(cl client.Client) reconcile.Reconciler { return labeller{c: cl, value: value} },
					Requests: func(context.Context) ([]reconcile.Request, error) {
						return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(cm)}}, nil
					},
				}},
			})
			if c.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if rep.Passes != c.wantPasses || rep.Reconciles != 1 || len(rep.Writes) != 0 {
					t.Errorf("report = %+v, want %d passes, 1 final reconcile, no writes", rep, c.wantPasses)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("error = %v, want it to contain %q", err, c.wantErr)
			}
		})
	}
}

// spinner never writes and asks to run again after 10ms: converged, and a loop all the same.
type spinner struct{}

func (spinner) Reconcile(context.Context, reconcile.Request) (reconcile.Result, error) {
	return reconcile.Result{RequeueAfter: 10 * time.Millisecond}, nil
}

func TestRunFailsWhatTestsNothing(t *testing.T) {
	req := reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "c"}}
	for _, c := range []struct {
		name     string
		requests []reconcile.Request
		wantErr  string
	}{
		{"fails a target whose Requests return none", nil, "nothing to reconcile for spin: Requests returned no request"},
		{"fails a reconciler that requeues at once after converging", []reconcile.Request{req}, "requeued at once: spin ns/c: RequeueAfter 10ms"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Run(context.Background(), Config{
				Client:    fake.NewClientBuilder().WithScheme(scheme.Scheme).Build(),
				MaxPasses: 2,
				Settle:    time.Millisecond,
				Targets: []Target{{
					Name:     "spin",
					New:      func(client.Client) reconcile.Reconciler { return spinner{} },
					Requests: func(context.Context) ([]reconcile.Request, error) { return c.requests, nil },
				}},
			})
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("error = %v, want it to contain %q", err, c.wantErr)
			}
		})
	}
}

func TestRunRefusesAnIncompleteConfig(t *testing.T) {
	_, err := Run(context.Background(), Config{Targets: []Target{{}}})
	if err == nil {
		t.Fatal("incomplete config accepted")
	}
	for _, want := range []string{"Client is required", "needs Name, New and Requests"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
