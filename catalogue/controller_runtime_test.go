package catalogue_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/loopwatch/loopwatch/catalogue"
	"github.com/loopwatch/loopwatch/catalogue/cataloguetest"
	"github.com/loopwatch/loopwatch/internal/crtest"
)

// notRead are families controller-runtime registers that no rule or dashboard reads, so the
// catalogue leaves them out on purpose. Any other family of the registry must be declared: a
// controller-runtime upgrade that adds or renames one fails this test.
var notRead = map[string]bool{
	"controller_runtime_webhook_panics_total":            true, // admission webhooks, not controllers
	"controller_runtime_conversion_webhook_panics_total": true,
	"certwatcher_read_certificate_total":                 true,
	"certwatcher_read_certificate_errors_total":          true,
}

// The declarations of the foreign families are checked against the controller-runtime this
// module builds with, not against its documentation: a real controller reconciles one request
// through a real workqueue, a real REST client makes one request, a real leader elector takes a
// lease (held in memory: the lease store is the only fake), and the families its
// metrics.Registry then exposes must be exactly the declared ones.
func TestControllerRuntimeExposesWhatIsDeclared(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	runOneReconcile(ctx, t)
	makeOneRESTRequest(ctx, t)
	takeALease(ctx, t)

	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var ours []*dto.MetricFamily
	for _, f := range families {
		name := f.GetName()
		if !strings.HasPrefix(name, "go_") && !strings.HasPrefix(name, "process_") && !notRead[name] {
			ours = append(ours, f)
		}
	}
	declared := append(catalogue.FromSource(catalogue.SourceControllerRuntime), catalogue.FromSource(catalogue.SourceClientGo)...)
	if err := cataloguetest.Compare(ours, declared); err != nil {
		t.Error(err)
	}
}

// runOneReconcile starts a controller with a source that enqueues one request, and returns
// once it has been reconciled: every reconcile and workqueue series then exists.
func runOneReconcile(ctx context.Context, t *testing.T) {
	t.Helper()
	done := make(chan struct{})
	var once sync.Once
	closeDone := reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		once.Do(func() { close(done) })
		return reconcile.Result{}, nil
	})
	ctrlCtx, stop := context.WithCancel(ctx)
	defer stop()
	wait, err := crtest.Start(ctrlCtx, "catalogue", closeDone, func(_ context.Context, q crtest.Queue) { q.Add(reconcile.Request{}) })
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("the controller did not reconcile its request")
	}
	stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
}

// makeOneRESTRequest sends one request through client-go's REST client, which reports it to the
// adapter controller-runtime installs.
func makeOneRESTRequest(ctx context.Context, t *testing.T) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	rc, err := rest.RESTClientFor(&rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{
		GroupVersion:         &schema.GroupVersion{Version: "v1"},
		NegotiatedSerializer: serializer.NewCodecFactory(runtime.NewScheme()).WithoutConversion(),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.Get().AbsPath("/healthz").Do(ctx).Error(); err != nil {
		t.Fatal(err)
	}
}

// takeALease runs client-go's leader election until it leads, which sets the gauge
// controller-runtime registers.
func takeALease(ctx context.Context, t *testing.T) {
	t.Helper()
	leCtx, stop := context.WithCancel(ctx)
	defer stop()
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          &memoryLock{identity: "catalogue-test"},
		Name:          "catalogue-test",
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { stop() },
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	le.Run(leCtx)
	if ctx.Err() != nil {
		t.Fatal("the leader elector did not take the lease")
	}
}

// memoryLock is a resourcelock.Interface over a record in memory: no API server runs here.
type memoryLock struct {
	mu       sync.Mutex
	identity string
	record   *resourcelock.LeaderElectionRecord
}

func (l *memoryLock) Get(context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.record == nil {
		return nil, nil, apierrors.NewNotFound(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "catalogue-test")
	}
	r := *l.record
	return &r, []byte(r.HolderIdentity + r.RenewTime.String()), nil
}

func (l *memoryLock) Create(_ context.Context, r resourcelock.LeaderElectionRecord) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.record = &r
	return nil
}

func (l *memoryLock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	return l.Create(ctx, r)
}

func (l *memoryLock) RecordEvent(string) {}
func (l *memoryLock) Identity() string   { return l.identity }
func (l *memoryLock) Describe() string   { return "memory/catalogue-test" }
