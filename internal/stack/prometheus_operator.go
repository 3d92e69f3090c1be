package stack

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// PrometheusOperatorOptions configures StartPrometheusOperator.
type PrometheusOperatorOptions struct {
	// Args are appended to the operator's command line (e.g. --namespaces).
	Args []string
	// StartTimeout bounds the start; default 60s.
	StartTimeout time.Duration
}

// PrometheusOperator is a running prometheus-operator (bin/prometheus-operator, `make tools`)
// watching a control plane with the admin's credentials. On the bare control plane (no
// scheduler, no kubelet) its Prometheus controller still does the part that reads
// PrometheusRules: it writes the rule ConfigMaps (prometheus-<name>-rulefiles-<i>) before it
// creates the StatefulSet, whose pods never start.
type PrometheusOperator struct {
	dir  string
	url  string
	http *http.Client
	proc *process
}

// StartPrometheusOperator starts the operator on a free loopback port in a new temporary
// directory, its kubeconfig the control plane's admin, and returns once its web server answers.
// The caller must Stop it.
func StartPrometheusOperator(ctx context.Context, cp *ControlPlane, opts PrometheusOperatorOptions) (o *PrometheusOperator, err error) {
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 60 * time.Second
	}
	bin, err := LookPath("prometheus-operator")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "loopwatch-prometheus-operator-")
	if err != nil {
		return nil, fmt.Errorf("create prometheus-operator directory: %w", err)
	}
	addr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	o = &PrometheusOperator{dir: dir, url: "http://" + addr, http: &http.Client{Timeout: 10 * time.Second}}
	defer func() {
		if err != nil {
			err = errors.Join(err, o.Stop())
			o = nil
		}
	}()
	kubeconfig := filepath.Join(dir, "admin.kubeconfig")
	if err := WriteKubeconfig(kubeconfig, cp.AdminConfig()); err != nil {
		return o, err
	}
	args := append([]string{"--web.listen-address=" + addr, "--log-level=info"}, opts.Args...)
	proc, err := startProcess("prometheus-operator", bin, args, []string{"KUBECONFIG=" + kubeconfig}, filepath.Join(dir, "prometheus-operator.log"))
	if err != nil {
		return o, err
	}
	o.proc = proc
	return o, proc.waitReady(ctx, opts.StartTimeout, func(ctx context.Context) error {
		return HTTPOK(ctx, o.http, o.url+"/healthz")
	})
}

// NewTestPrometheusOperator starts the operator for t and stops it in t.Cleanup, with
// NewTestControlPlane's handling of -short, missing binaries, failures and logs.
func NewTestPrometheusOperator(t testing.TB, cp *ControlPlane, opts PrometheusOperatorOptions) *PrometheusOperator {
	t.Helper()
	SkipShort(t)
	o, err := StartPrometheusOperator(context.Background(), cp, opts)
	if err != nil {
		failStart(t, err)
	}
	t.Cleanup(func() {
		if err := o.Stop(); err != nil {
			t.Errorf("stop prometheus-operator: %v", err)
		}
		finish(t, o.dir, o.Logs())
	})
	return o
}

// Stop stops the operator. Its directory is kept.
func (o *PrometheusOperator) Stop() error {
	if o.proc == nil {
		return nil
	}
	return o.proc.stop(10 * time.Second)
}

// URL is the operator's web address (/metrics, /healthz).
func (o *PrometheusOperator) URL() string { return o.url }

// Logs maps the operator to its log file.
func (o *PrometheusOperator) Logs() map[string]string {
	if o.proc == nil {
		return map[string]string{}
	}
	return map[string]string{o.proc.name: o.proc.logPath}
}

// ManagedResources reads prometheus_operator_managed_resources for resource (a kind, such as
// "PrometheusRule") from the operator's own /metrics, by state ("selected", "rejected"), summed
// over the operator's controllers. A rejected PrometheusRule shows nowhere else but in a Warning
// event.
func (o *PrometheusOperator) ManagedResources(ctx context.Context, resource string) (map[string]float64, error) {
	families, err := readMetrics(ctx, o.http, o.url+"/metrics")
	if err != nil {
		return nil, fmt.Errorf("prometheus-operator: %w", err)
	}
	out := map[string]float64{}
	mf, ok := families["prometheus_operator_managed_resources"]
	if !ok {
		return out, nil
	}
	for _, m := range mf.GetMetric() {
		var res, state string
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "resource":
				res = l.GetValue()
			case "state":
				state = l.GetValue()
			}
		}
		if res == resource {
			out[state] += m.GetGauge().GetValue()
		}
	}
	return out, nil
}
