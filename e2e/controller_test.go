package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/loopwatch/loopwatch/instrument"
	"github.com/loopwatch/loopwatch/internal/stack"
)

// The test controller reconciles labelled ConfigMaps in one namespace the way a real controller
// does its objects, so every metric family the rules and dashboards read has real series.
const (
	controllerName = "configmap-mirror"
	finalizerName  = "e2e.loopwatch.io/cleanup"
	selectorLabel  = "e2e.loopwatch.io/mirrored"
	observedKey    = "e2e.loopwatch.io/observed"
	// holdFinalizer keeps an object Terminating, as a stuck external clean-up would.
	holdFinalizer = "e2e.loopwatch.io/hold-finalizer"
	// flakyPrefix names objects whose reconcile always fails, as a broken dependency would.
	flakyPrefix = "flaky-"
	// periodicPrefix names objects re-checked every 2s (RequeueAfter), as an external state would be.
	periodicPrefix = "periodic-"
)

// mirrorReconciler copies each ConfigMap's data["value"] into an annotation, owns a finalizer,
// fails on "flaky-" objects and re-checks "periodic-" objects (RequeueAfter): reconcile results
// success, error and requeue_after, GET/LIST/PATCH calls, and a finalizer age.
type mirrorReconciler struct {
	client client.Client
}

// Reconcile implements reconcile.Reconciler.
func (r *mirrorReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var cm corev1.ConfigMap
	if err := r.client.Get(ctx, req.NamespacedName, &cm); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !cm.DeletionTimestamp.IsZero() {
		if cm.Annotations[holdFinalizer] == "true" || !controllerutil.ContainsFinalizer(&cm, finalizerName) {
			return ctrl.Result{}, nil
		}
		base := cm.DeepCopy()
		controllerutil.RemoveFinalizer(&cm, finalizerName)
		return ctrl.Result{}, r.client.Patch(ctx, &cm, client.MergeFrom(base))
	}
	var siblings corev1.ConfigMapList
	if err := r.client.List(ctx, &siblings, client.InNamespace(req.Namespace), client.HasLabels{selectorLabel}); err != nil {
		return ctrl.Result{}, fmt.Errorf("list siblings: %w", err)
	}
	base := cm.DeepCopy()
	controllerutil.AddFinalizer(&cm, finalizerName)
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[observedKey] = cm.Data["value"]
	if cm.Annotations[observedKey] != base.Annotations[observedKey] || !controllerutil.ContainsFinalizer(base, finalizerName) {
		if err := r.client.Patch(ctx, &cm, client.MergeFrom(base)); err != nil {
			return ctrl.Result{}, fmt.Errorf("patch: %w", err)
		}
	}
	if strings.HasPrefix(cm.Name, flakyPrefix) {
		return ctrl.Result{}, errors.New("the object store this object needs is unavailable")
	}
	if strings.HasPrefix(cm.Name, periodicPrefix) {
		return ctrl.Result{RequeueAfter: 2 * time.Second}, nil
	}
	return ctrl.Result{}, nil
}

// testManager is the running manager and where it serves metrics.
type testManager struct {
	metricsAddr string
	logPath     string
	done        <-chan struct{}
	err         *error
}

// stopped reports why the manager stopped early (it must run until the test ends), or nil.
func (m testManager) stopped() error {
	select {
	case <-m.done:
		return fmt.Errorf("the test manager stopped early: %v (log: %s)", *m.err, tailFile(m.logPath, 20))
	default:
		return nil
	}
}

// startManager runs a controller-runtime manager with the mirror controller, leader election and
// a metrics server on a loopback port, authenticated as a pod-bound ServiceAccount token (as a
// deployed controller is). It stops in t.Cleanup.
func startManager(t *testing.T, cp *stack.ControlPlane, namespace string) testManager {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cfg, err := cp.PodConfig(ctx, namespace, "mirror-controller", "mirror-controller-0")
	if err != nil {
		t.Fatal(err)
	}
	if err := cp.GrantClusterAdmin(ctx, stack.ServiceAccountSubject(namespace, "mirror-controller")); err != nil {
		t.Fatal(err)
	}
	cfg.UserAgent = "mirror-controller/e2e"
	// The defaults (QPS 20) would throttle a controller meant to be busy in a short test.
	cfg.QPS, cfg.Burst = 200, 400

	logPath := filepath.Join(t.TempDir(), "manager.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	var logMu sync.Mutex
	logger := funcr.New(func(prefix, args string) {
		logMu.Lock()
		defer logMu.Unlock()
		_, _ = fmt.Fprintln(logFile, time.Now().Format(time.RFC3339Nano), prefix, args)
	}, funcr.Options{Verbosity: 1})
	ctrl.SetLogger(logger)

	metricsAddr, err := stack.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Logger:                  logger,
		Metrics:                 metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress:  "0",
		LeaderElection:          true,
		LeaderElectionID:        "mirror-controller",
		LeaderElectionNamespace: namespace,
		// Generous lease timings: on a busy 2-core CI machine a missed 10s renew deadline would
		// stop the manager mid-test.
		LeaseDuration: ptr.To(60 * time.Second),
		RenewDeadline: ptr.To(45 * time.Second),
		RetryPeriod:   ptr.To(5 * time.Second),
		Cache:         cache.Options{DefaultNamespaces: map[string]cache.Config{namespace: {}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	// controller-runtime's registry is the one the manager serves; the instrument package never
	// registers globally on its own, it is handed this registerer.
	metrics, err := instrument.NewMetrics(ctrlmetrics.Registry)
	if err != nil {
		t.Fatal(err)
	}
	reconciler := instrument.Reconciler(controllerName, mgr.GetClient(), metrics, func(c client.Client) reconcile.Reconciler {
		return &mirrorReconciler{client: c}
	})
	hasLabel, err := predicate.LabelSelectorPredicate(metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: selectorLabel, Operator: metav1.LabelSelectorOpExists}}})
	if err != nil {
		t.Fatal(err)
	}
	err = ctrl.NewControllerManagedBy(mgr).
		Named(controllerName).
		For(&corev1.ConfigMap{}, builder.WithPredicates(hasLabel)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 2}).
		Complete(reconciler)
	if err != nil {
		t.Fatal(err)
	}
	age, err := instrument.NewFinalizerAge(instrument.FinalizerAgeConfig{
		Controller: controllerName,
		Finalizer:  finalizerName,
		Reader:     mgr.GetCache(),
		NewList:    func() client.ObjectList { return &corev1.ConfigMapList{} },
		Metrics:    metrics,
		Interval:   time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr.Add(age); err != nil {
		t.Fatal(err)
	}

	done := make(chan struct{})
	var startErr error
	go func() {
		startErr = mgr.Start(ctx)
		close(done)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		if startErr != nil {
			t.Errorf("manager: %v", startErr)
		}
		_ = logFile.Close()
		if t.Failed() {
			// t.TempDir goes away with the test: print the end of the log here.
			t.Logf("manager log, last lines:\n%s", tailFile(logPath, 40))
		}
	})
	return testManager{metricsAddr: metricsAddr, logPath: logPath, done: done, err: &startErr}
}

// runWorkload creates the mirrored ConfigMaps (plain ones, a periodic one, a flaky one, one stuck
// in deletion behind its finalizer) and then, until ctx ends, keeps the audit signals coming from
// distinct actors: a user changing values (which the controller mirrors back: a write fight) and
// rewriting an unmirrored object alone (a hot object), a second user updating with a stale
// resourceVersion (409 conflicts), and two pods of one ServiceAccount writing the same object (a
// replica race).
func runWorkload(ctx context.Context, t *testing.T, cp *stack.ControlPlane, namespace string) {
	t.Helper()
	newClient := func(cfg *rest.Config, err error) client.Client {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		c, err := client.New(cfg, client.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	editor := newClient(cp.UserConfig("editor"))
	stale := newClient(cp.UserConfig("stale-writer"))
	racers := []client.Client{
		newClient(cp.PodConfig(ctx, namespace, "racer", "racer-0")),
		newClient(cp.PodConfig(ctx, namespace, "racer", "racer-1")),
	}
	writeConfigMaps := rbacv1.PolicyRule{Verbs: []string{"create", "get", "update", "patch", "delete"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}
	for _, subject := range []rbacv1.Subject{stack.UserSubject("editor"), stack.UserSubject("stale-writer"), stack.ServiceAccountSubject(namespace, "racer")} {
		if err := cp.Grant(ctx, subject, writeConfigMaps); err != nil {
			t.Fatal(err)
		}
	}

	names := []string{"alpha", "beta", "gamma", periodicPrefix + "delta", flakyPrefix + "epsilon", "stuck"}
	for _, name := range names {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{selectorLabel: "true"}},
			Data:       map[string]string{"value": "0"},
		}
		if name == "stuck" {
			cm.Annotations = map[string]string{holdFinalizer: "true"}
		}
		if err := editor.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	// "hot" and "raced" are not mirrored, so no other writer interleaves: only the editor writes
	// "hot", several times a second (a hot object), and only the two racer pods write "raced",
	// alternately (a replica race).
	for _, name := range []string{"hot", "raced"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Data: map[string]string{"value": "0"}}
		if err := editor.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	var staleCopy corev1.ConfigMap
	if err := stale.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "gamma"}, &staleCopy); err != nil {
		t.Fatal(err)
	}

	// Delete "stuck" once the controller has added its finalizer, so it stays Terminating.
	go func() {
		for ctx.Err() == nil {
			var cm corev1.ConfigMap
			if err := editor.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "stuck"}, &cm); err == nil && controllerutil.ContainsFinalizer(&cm, finalizerName) {
				_ = editor.Delete(ctx, &cm)
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	go func() {
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for i := 1; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			value := fmt.Sprint(i)
			_ = editor.Patch(ctx, configMapRef(namespace, names[i%4]), valuePatch(value))
			_ = editor.Patch(ctx, configMapRef(namespace, "hot"), valuePatch(value))
			_ = racers[i%2].Patch(ctx, configMapRef(namespace, "raced"), valuePatch(value))
			if i%4 == 0 {
				// staleCopy keeps its first resourceVersion: every update is a 409 Conflict.
				staleCopy.Data = map[string]string{"value": value}
				_ = stale.Update(ctx, staleCopy.DeepCopy())
			}
		}
	}()
}

func configMapRef(namespace, name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
}

func valuePatch(value string) client.Patch {
	return client.RawPatch("application/merge-patch+json", []byte(fmt.Sprintf(`{"data":{"value":%q}}`, value)))
}

// tailFile returns the last n lines of the file at path.
func tailFile(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
