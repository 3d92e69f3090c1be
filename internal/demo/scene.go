package demo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loopwatch/loopwatch/internal/stack"
)

// Scene is one incident's world on the cluster: a namespace of its own holding the operator's
// service accounts and objects, operator pods confined to it, a fresh exporter and a fresh
// Prometheus. Close it before starting the next one.
type Scene struct {
	c    *Cluster
	Name string
	// Namespace holds the scene's objects, service accounts and operator pods.
	Namespace string
	// workload is how the operator is deployed in the scene: its service account and job.
	workload Workload
	dir      string
	prom     *stack.Prometheus
	pods     []*pod
	// bg is cancelled when the scene closes: the loads running in the background stop.
	bg     context.Context
	stopBG context.CancelFunc
	wg     sync.WaitGroup
	start  time.Time
}

// ScenePods is how many operator pods an incident's scene can run: each has its scrape target,
// its pod-bound token and its metrics address from the start, and runs when started.
const ScenePods = 2

// SceneOptions configure NewScene.
type SceneOptions struct {
	// Pods is how many operator pod identities the scene has (default ScenePods).
	Pods int
	// ScrapeInterval is Prometheus' (default ScrapeInterval).
	ScrapeInterval time.Duration
	// Workload is how the operator is deployed (default: service account and job
	// backup-operator).
	Workload Workload
}

// Workload is how the operator is deployed: the service account its pods run as and the job
// Prometheus scrapes them under. Controllers in the wild run as their namespace's default
// ServiceAccount, or as kubebuilder's scaffold names them (ServiceAccount controller-manager,
// metrics Service <project>-controller-manager-metrics-service): names that say nothing of each
// other.
type Workload struct {
	ServiceAccount, Job string
}

// orDefault fills in the reference operator's names where w leaves them empty.
func (w Workload) orDefault() Workload {
	if w.ServiceAccount == "" {
		w.ServiceAccount = operatorSA
	}
	if w.Job == "" {
		w.Job = operatorJob
	}
	return w
}

// NewScene starts a scene called name (a DNS label): its namespace, service accounts, pod
// identities, a fresh exporter and a fresh Prometheus scraping them.
func (c *Cluster) NewScene(ctx context.Context, name string, opts SceneOptions) (s *Scene, err error) {
	if opts.Pods == 0 {
		opts.Pods = ScenePods
	}
	if opts.ScrapeInterval == 0 {
		opts.ScrapeInterval = ScrapeInterval
	}
	c.scenes++
	ns := fmt.Sprintf("%s-%d", name, c.scenes)
	dir := filepath.Join(c.dir, ns)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	s = &Scene{c: c, Name: name, Namespace: ns, workload: opts.Workload.orDefault(), dir: dir, start: time.Now()}
	s.bg, s.stopBG = context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			s.Close(true)
		}
	}()
	c.say("== scene %s (namespace %s)", name, ns)
	if err := c.startExporter(ctx, dir); err != nil {
		return s, err
	}
	for _, sa := range []string{s.workload.ServiceAccount, rivalSA} {
		if _, err := c.cp.ServiceAccountConfig(ctx, ns, sa); err != nil {
			return s, err
		}
		if err := c.cp.GrantClusterAdmin(ctx, stack.ServiceAccountSubject(ns, sa)); err != nil {
			return s, err
		}
	}
	for i := range opts.Pods {
		p, err := s.newPod(ctx, podName(i))
		if err != nil {
			return s, err
		}
		s.pods = append(s.pods, p)
	}
	if err := s.startPrometheus(ctx, opts.ScrapeInterval); err != nil {
		return s, err
	}
	return s, nil
}

func (s *Scene) startPrometheus(ctx context.Context, scrape time.Duration) error {
	targets := []stack.ScrapeTarget{s.c.exporterTarget()}
	for _, p := range s.pods {
		targets = append(targets, stack.ScrapeTarget{Job: s.workload.Job, Addresses: []string{p.addr},
			Labels: map[string]string{"namespace": s.Namespace, "pod": p.name}})
	}
	apiserver, err := s.c.cp.ScrapeTarget("apiserver")
	if err != nil {
		return err
	}
	p, err := stack.StartPrometheus(ctx, stack.PrometheusOptions{
		RuleFiles: []string{s.c.rules}, Targets: append(targets, apiserver),
		ScrapeInterval: scrape, EvaluationInterval: time.Duration(s.c.cfg.RuleInterval),
		// Time compressed (the demo, the matrix): every group at the short interval, the
		// 30-minute SLO group too, as promtool does; the soak keeps production intervals.
		OneEvaluationInterval: time.Duration(s.c.cfg.RuleInterval) < time.Minute,
	})
	if err != nil {
		return err
	}
	s.prom = p
	s.say("Prometheus at %s with the generated rules", p.URL())
	return nil
}

// Prometheus is the scene's Prometheus.
func (s *Scene) Prometheus() *stack.Prometheus { return s.prom }

// Go runs load in the background until the scene closes.
func (s *Scene) Go(name string, load func(ctx context.Context) error) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := load(s.bg); err != nil && s.bg.Err() == nil {
			s.say("%s stopped: %v", name, err)
		}
	}()
}

// Close stops the loads, the operator pods and Prometheus. The exporter keeps running until the
// next scene or the cluster's Close. When failed, the logs are printed.
func (s *Scene) Close(failed bool) {
	s.stopBG()
	s.wg.Wait()
	for _, p := range s.pods {
		p.stop()
	}
	if s.prom != nil {
		_ = s.prom.Stop()
	}
	if failed {
		printf := func(f string, a ...any) { fmt.Fprintf(s.c.opts.Out, f+"\n", a...) }
		logs := map[string]string{}
		if s.c.exporter != nil {
			logs["loopwatch-exporter"] = s.c.exporter.Log
		}
		for _, p := range s.pods {
			logs[p.name] = p.log
		}
		stack.PrintLogs(printf, logs)
		if s.prom != nil {
			stack.PrintLogs(printf, s.prom.Logs())
		}
	}
	if s.prom != nil && !failed && !s.c.opts.KeepDir {
		_ = os.RemoveAll(s.prom.Dir())
	}
}

func (s *Scene) say(format string, args ...any) { s.c.say(format, args...) }

// ensureNamespace creates another namespace of the scene (a lease in the wrong place).
func (s *Scene) ensureNamespace(ctx context.Context, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := s.c.kube.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %q: %w", name, err)
	}
	return nil
}

// Alert is one loopwatch alert Prometheus reports as pending or firing.
type Alert struct {
	Name        string
	State       promv1.AlertState
	Labels      model.LabelSet
	Annotations model.LabelSet
	ActiveAt    time.Time
}

// String is name{labels} state.
func (a Alert) String() string {
	var parts []string
	for k, v := range a.Labels {
		if k != model.AlertNameLabel {
			parts = append(parts, fmt.Sprintf("%s=%q", k, v))
		}
	}
	sort.Strings(parts)
	return a.Name + "{" + strings.Join(parts, ", ") + "} " + string(a.State)
}

// Alerts returns the loopwatch alerts that are pending or firing, sorted.
func (s *Scene) Alerts(ctx context.Context) ([]Alert, error) {
	res, err := s.prom.API().Alerts(ctx)
	if err != nil {
		return nil, fmt.Errorf("list alerts: %w", err)
	}
	var out []Alert
	for _, a := range res.Alerts {
		name := string(a.Labels[model.AlertNameLabel])
		if !strings.HasPrefix(name, "Loopwatch") {
			continue
		}
		out = append(out, Alert{Name: name, State: a.State, Labels: a.Labels, Annotations: a.Annotations, ActiveAt: a.ActiveAt})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}

// checkShares checks that every value the scene's Prometheus recorded for a share (a recording
// rule declared gen.Recording.Share) stayed within [0, 1]. Rules that divide the outputs of two
// groups see them up to an interval apart: a share recorded as 1.85 or +Inf reads as "185 % of
// reconciles fail" and as a peak the failure fell from.
func (s *Scene) checkShares(ctx context.Context) error {
	window := (time.Since(s.start).Round(time.Second) + time.Second).String()
	var errs []error
	for _, name := range s.c.shares {
		q := fmt.Sprintf("max_over_time(%[1]s[%[2]s]) > 1 or min_over_time(%[1]s[%[2]s]) < 0", name, window)
		v, err := s.prom.Query(ctx, q)
		if err != nil {
			return fmt.Errorf("check shares: %w", err)
		}
		for _, smp := range v {
			errs = append(errs, fmt.Errorf("share %s%s went to %v, outside [0, 1]", name, smp.Metric, smp.Value))
		}
	}
	return errors.Join(errs...)
}
