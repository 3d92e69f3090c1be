package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/loopwatch/loopwatch/gen"
	"github.com/loopwatch/loopwatch/internal/stack"
	backupv1 "github.com/loopwatch/loopwatch/operator/api/v1alpha1"
	"github.com/loopwatch/loopwatch/operator/app"
)

const (
	namespace      = "backup-system"
	operatorSA     = "backup-operator"
	rivalSA        = "tier-controller"
	operatorJob    = "backup-operator"
	exporterJob    = "loopwatch-exporter"
	backups        = 10
	healthyWatch   = 45 * time.Second
	incidentWithin = 4 * time.Minute
)

type demo struct {
	dir      string
	bin      string
	cp       *stack.ControlPlane
	prom     *stack.Prometheus
	exporter *exporterProcess
	operator *process
	kube     client.Client
	opConfig string // the operator's kubeconfig
	opAddr   string // the operator's metrics address
	start    time.Time
}

func newDemo() (*demo, error) {
	bin, err := stack.BinDir()
	if err != nil {
		return nil, err
	}
	for _, b := range []string{"backup-operator", "loopwatch", "kube-apiserver", "etcd", "prometheus"} {
		if _, err := stack.LookPath(b); err != nil {
			return nil, fmt.Errorf("%w (make demo builds it)", err)
		}
	}
	dir, err := os.MkdirTemp("", "loopwatch-demo-")
	if err != nil {
		return nil, err
	}
	return &demo{dir: dir, bin: bin, start: time.Now()}, nil
}

func (d *demo) say(format string, args ...any) {
	fmt.Printf("[%5.1fs] %s\n", time.Since(d.start).Seconds(), fmt.Sprintf(format, args...))
}

func (d *demo) run(ctx context.Context) error {
	d.say("work directory (logs, audit log, rules): %s", d.dir)
	if err := d.startExporter(); err != nil {
		return err
	}
	if err := d.startControlPlane(ctx); err != nil {
		return err
	}
	if err := d.setupIdentities(ctx); err != nil {
		return err
	}
	rules, err := d.writeRules()
	if err != nil {
		return err
	}
	if err := d.startPrometheus(ctx, rules); err != nil {
		return err
	}

	d.say("== healthy run: operator with leader election, %d Backups", backups)
	if err := d.startOperator(); err != nil {
		return err
	}
	if err := d.createBackups(ctx); err != nil {
		return err
	}
	if err := d.waitBackupsReady(ctx); err != nil {
		return err
	}
	if err := d.expectSilence(ctx, healthyWatch); err != nil {
		return err
	}

	d.say("== incident 1, seed 002: a timestamp annotation patched on every reconcile (--fault-hot-loop)")
	if err := d.restartOperator("--fault-hot-loop"); err != nil {
		return err
	}
	if err := d.waitForAlert(ctx, "LoopwatchPatchRateHigh", map[string]string{"job": operatorJob}); err != nil {
		return err
	}

	d.say("== incident 2, seed 004: a second controller fights over an annotation (--fault-fight)")
	if err := d.restartOperator("--fault-fight", "--fault-fight-as=system:serviceaccount:"+namespace+":"+rivalSA); err != nil {
		return err
	}
	if err := d.waitForAlert(ctx, "LoopwatchWriteFight", nil); err != nil {
		return err
	}
	d.stopOperator()
	return d.analyzeAuditLog(ctx)
}

func (d *demo) close(failed bool) {
	d.stopOperator()
	if d.prom != nil {
		_ = d.prom.Stop()
	}
	if d.cp != nil {
		_ = d.cp.Stop()
	}
	if d.exporter != nil {
		d.exporter.stop()
	}
	if failed {
		fmt.Fprintf(os.Stderr, "logs kept in %s:\n", d.dir)
		for _, logs := range []map[string]string{d.logs(), d.cpLogs(), d.promLogs()} {
			stack.PrintLogs(func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }, logs)
		}
		return
	}
	_ = os.RemoveAll(d.dir)
	d.say("stopped everything")
}

func (d *demo) logs() map[string]string {
	out := map[string]string{}
	if d.operator != nil {
		out["backup-operator"] = d.operator.log
	}
	if d.exporter != nil {
		out["loopwatch-exporter"] = d.exporter.log
	}
	return out
}

func (d *demo) cpLogs() map[string]string {
	if d.cp == nil {
		return nil
	}
	return d.cp.Logs()
}

func (d *demo) promLogs() map[string]string {
	if d.prom == nil {
		return nil
	}
	return d.prom.Logs()
}

func (d *demo) startControlPlane(ctx context.Context) error {
	crds, err := filepath.Abs(filepath.Join(d.bin, "..", "operator", "config", "crd", "bases"))
	if err != nil {
		return err
	}
	d.say("starting etcd and kube-apiserver (audit webhook -> exporter at %s)", d.exporter.url)
	cp, err := stack.StartControlPlane(ctx, stack.ControlPlaneOptions{
		CRDDirectories: []string{crds},
		AuditWebhook:   d.exporter.webhook(),
		AuditLog:       true,
	})
	if err != nil {
		return err
	}
	d.cp = cp
	d.say("kube-apiserver ready at %s", cp.Host())
	kube, err := client.New(cp.AdminConfig(), client.Options{Scheme: mustScheme()})
	if err != nil {
		return err
	}
	d.kube = kube
	return nil
}

func mustScheme() *runtime.Scheme {
	s, err := app.NewScheme()
	if err != nil {
		panic(err)
	}
	return s
}

// setupIdentities creates the operator's ServiceAccount (cluster-admin, for brevity) and the rival
// controller's, and writes the operator's kubeconfig: audit events then name
// system:serviceaccount:backup-system:backup-operator.
func (d *demo) setupIdentities(ctx context.Context) error {
	cfg, err := d.cp.ServiceAccountConfig(ctx, namespace, operatorSA)
	if err != nil {
		return err
	}
	if err := d.cp.GrantClusterAdmin(ctx, stack.ServiceAccountSubject(namespace, operatorSA)); err != nil {
		return err
	}
	if _, err := d.cp.ServiceAccountConfig(ctx, namespace, rivalSA); err != nil {
		return err
	}
	if err := d.cp.GrantClusterAdmin(ctx, stack.ServiceAccountSubject(namespace, rivalSA)); err != nil {
		return err
	}
	d.opConfig = filepath.Join(d.dir, "operator.kubeconfig")
	return writeKubeconfig(d.opConfig, cfg)
}

func writeKubeconfig(path string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["demo"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["demo"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken, ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts["demo"] = &clientcmdapi.Context{Cluster: "demo", AuthInfo: "demo"}
	kc.CurrentContext = "demo"
	return clientcmd.WriteToFile(*kc, path)
}

// demoConfig is the default config with short `for` durations and a fast evaluation interval, so
// that incidents alert within a minute instead of the production 5–15 minutes. Everything else —
// expressions, thresholds — is what `loopwatch gen` ships.
func demoConfig() gen.Config {
	cfg := gen.Default()
	cfg.Selectors.Controller = `job="` + operatorJob + `"`
	cfg.Selectors.ControllerTargets = `job="` + operatorJob + `"`
	cfg.Selectors.Exporter = `job="` + exporterJob + `"`
	cfg.RuleInterval = gen.Duration(2 * time.Second)
	short := gen.Duration(20 * time.Second)
	cfg.Alerts.PatchRate.For = short
	cfg.Alerts.HotLoop.For = short
	cfg.Alerts.WriteFight.For = short
	return cfg
}

func (d *demo) writeRules() (string, error) {
	m, err := gen.Build(demoConfig())
	if err != nil {
		return "", err
	}
	files, err := m.Files()
	if err != nil {
		return "", err
	}
	if err := gen.WriteFiles(d.dir, files); err != nil {
		return "", err
	}
	d.say("generated %d alerts into %s (production rules with 20s 'for' durations)", len(m.Alerts()), filepath.Join(d.dir, gen.RulesFile))
	return filepath.Join(d.dir, gen.RulesFile), nil
}

func (d *demo) startPrometheus(ctx context.Context, rules string) error {
	addr, err := stack.FreeAddr()
	if err != nil {
		return err
	}
	d.opAddr = addr
	apiserver, err := d.cp.ScrapeTarget("apiserver")
	if err != nil {
		return err
	}
	p, err := stack.StartPrometheus(ctx, stack.PrometheusOptions{
		RuleFiles: []string{rules},
		Targets: []stack.ScrapeTarget{
			{Job: operatorJob, Addresses: []string{d.opAddr}, Labels: map[string]string{"namespace": namespace, "pod": "backup-operator-0"}},
			d.exporter.scrapeTarget(),
			apiserver,
		},
	})
	if err != nil {
		return err
	}
	d.prom = p
	d.say("Prometheus at %s with the generated rules", p.URL())
	return nil
}

func (d *demo) startOperator(extra ...string) error {
	args := append([]string{
		"--metrics-bind-address=" + d.opAddr, "--metrics-insecure",
		"--health-probe-bind-address=0",
		"--leader-election-namespace=" + namespace,
		"--store-dir=" + filepath.Join(d.dir, "store"),
		"--zap-log-level=info",
	}, extra...)
	p, err := startProcess(d.dir, "backup-operator", filepath.Join(d.bin, "backup-operator"), []string{"KUBECONFIG=" + d.opConfig}, args...)
	if err != nil {
		return err
	}
	d.operator = p
	d.say("backup-operator started %s", strings.Join(extra, " "))
	return nil
}

func (d *demo) stopOperator() {
	if d.operator != nil {
		d.operator.stop()
		d.operator = nil
	}
}

func (d *demo) restartOperator(faults ...string) error {
	d.stopOperator()
	return d.startOperator(faults...)
}

func (d *demo) createBackups(ctx context.Context) error {
	for i := range 5 {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("settings-%d", i), Labels: map[string]string{"backup": "yes"}},
			Data:       map[string]string{"value": fmt.Sprint(i)},
		}
		if err := d.kube.Create(ctx, cm); err != nil {
			return fmt.Errorf("create ConfigMap: %w", err)
		}
	}
	for i := range backups {
		b := &backupv1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("nightly-%d", i)}}
		b.Spec.Selector = metav1.LabelSelector{MatchLabels: map[string]string{"backup": "yes"}}
		if err := d.kube.Create(ctx, b); err != nil {
			return fmt.Errorf("create Backup: %w", err)
		}
	}
	return nil
}

func (d *demo) waitBackupsReady(ctx context.Context) error {
	var ready int
	err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if ended, err := d.operator.exited(); ended {
			return false, fmt.Errorf("backup-operator exited: %v (log %s)", err, d.operator.log)
		}
		var list backupv1.BackupList
		if err := d.kube.List(ctx, &list, client.InNamespace(namespace)); err != nil {
			return false, err
		}
		ready = 0
		for _, b := range list.Items {
			if meta.IsStatusConditionTrue(b.Status.Conditions, backupv1.ConditionReady) {
				ready++
			}
		}
		return ready == backups, nil
	})
	if err != nil {
		return fmt.Errorf("%d of %d Backups Ready: %w", ready, backups, err)
	}
	d.say("all %d Backups Ready", backups)
	return nil
}

// firing returns the loopwatch alerts firing now, as "name{labels}".
func (d *demo) firing(ctx context.Context) ([]string, error) {
	v, err := d.prom.Query(ctx, `ALERTS{alertstate="firing", alertname=~"Loopwatch.*"}`)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range v {
		out = append(out, describe(s.Metric))
	}
	sort.Strings(out)
	return out, nil
}

func describe(m model.Metric) string {
	var parts []string
	for k, v := range m {
		if k != model.MetricNameLabel && k != "alertname" && k != "alertstate" {
			parts = append(parts, fmt.Sprintf("%s=%q", k, v))
		}
	}
	sort.Strings(parts)
	return string(m["alertname"]) + "{" + strings.Join(parts, ", ") + "}"
}

// expectSilence watches the healthy run: no loopwatch alert may fire.
func (d *demo) expectSilence(ctx context.Context, dur time.Duration) error {
	if err := d.prom.WaitForTargetsUp(ctx); err != nil {
		return err
	}
	d.say("watching the healthy run for %s: no loopwatch alert may fire", dur)
	deadline := time.Now().Add(dur)
	for time.Now().Before(deadline) {
		f, err := d.firing(ctx)
		if err != nil {
			return err
		}
		if len(f) > 0 {
			return fmt.Errorf("healthy run, yet alerts fire: %v", f)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
	d.say("healthy run: silent")
	return nil
}

func (d *demo) waitForAlert(ctx context.Context, name string, labels map[string]string) error {
	d.say("waiting for %s ...", name)
	wctx, cancel := context.WithTimeout(ctx, incidentWithin)
	defer cancel()
	a, err := d.prom.WaitForAlert(wctx, name, labels)
	if err != nil {
		return fmt.Errorf("alert %s did not fire within %s: %w", name, incidentWithin, err)
	}
	d.say("FIRING %s", describe(model.Metric(a.Labels)))
	for _, k := range []model.LabelName{"summary", "description", "runbook_url"} {
		fmt.Printf("         %s: %s\n", k, a.Annotations[k])
	}
	return nil
}
