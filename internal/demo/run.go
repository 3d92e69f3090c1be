package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// DefaultScenario is what `make demo` shows without SCENARIO=.
const DefaultScenario = "write-fight"

// RunOptions configure Run.
type RunOptions struct {
	// Out receives everything; default os.Stdout.
	Out io.Writer
	// Scenario names the incident (or "healthy"); default DefaultScenario.
	Scenario string
	// Keep leaves the stack running after the incident until ctx ends (Ctrl-C).
	Keep bool
}

// Run is `make demo`: a cluster, one scenario in its scene, then what an on-call engineer would
// look at — the firing alerts with their annotations, `loopwatch diagnose`, the audit log
// post-mortem and where Prometheus is. With Keep it then waits, the stack up, until ctx ends.
// Everything it started is stopped before it returns.
func Run(ctx context.Context, opts RunOptions) (err error) {
	if opts.Out == nil {
		opts.Out = os.Stdout
	}
	if opts.Scenario == "" {
		opts.Scenario = DefaultScenario
	}
	inc, err := Scenario(opts.Scenario)
	if err != nil {
		return err
	}
	c, err := StartCluster(ctx, Options{Out: opts.Out})
	if err != nil {
		return err
	}
	var s *Scene
	defer func() {
		if s != nil {
			s.Close(err != nil)
		}
		c.Close(err != nil)
	}()
	res, s := c.RunIncident(ctx, inc, true)
	fmt.Fprintln(opts.Out)
	WriteTable(opts.Out, NewMatrixRun([]Result{res}, nil))
	if res.Err != nil {
		return res.Err
	}
	if err := s.show(ctx, opts.Out); err != nil {
		return err
	}
	if !res.Passed() {
		err = fmt.Errorf("scenario %s: the expected alerts did not fire alone", inc.Name)
	}
	if opts.Keep {
		s.printAccess(opts.Out)
		<-ctx.Done()
		fmt.Fprintln(opts.Out, "stopping ...")
	}
	return err
}

// show prints the alerts that fire with their annotations, the diagnosis, the audit log
// post-mortem and Prometheus' address.
func (s *Scene) show(ctx context.Context, out io.Writer) error {
	alerts, err := s.Alerts(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\n== alerts pending or firing in %s\n", s.prom.URL())
	if len(alerts) == 0 {
		fmt.Fprintln(out, "none")
	}
	for _, a := range alerts {
		fmt.Fprintln(out, a)
		for _, k := range []model.LabelName{"summary", "description", "next_step", "runbook_url"} {
			fmt.Fprintf(out, "    %s: %s\n", k, a.Annotations[k])
		}
	}
	if err := s.showDiagnosis(ctx, out); err != nil {
		return err
	}
	if err := s.c.analyze(ctx, out); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nPrometheus: %s/alerts\n", s.prom.URL())
	return nil
}

// showDiagnosis prints what `loopwatch diagnose` says about the scene, with the command that
// says the same.
func (s *Scene) showDiagnosis(ctx context.Context, out io.Writer) error {
	since := time.Since(s.start).Round(time.Minute) + time.Minute
	fmt.Fprintf(out, "\n== loopwatch diagnose --prometheus %s --config %s --since %s\n", s.prom.URL(), s.c.configFile, since)
	r, err := s.diagnosis(ctx)
	if err != nil {
		return err
	}
	return r.WriteText(out)
}

// analyzeLines bounds the post-mortem printed.
const analyzeLines = 40

// analyze runs `loopwatch audit analyze` on the API server's audit log file: the post-mortem
// finds the fights, hot objects and races without Prometheus.
func (c *Cluster) analyze(ctx context.Context, out io.Writer) error {
	log := c.cp.AuditLogPath()
	fmt.Fprintf(out, "\n== loopwatch audit analyze %s\n", log)
	actx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var buf strings.Builder
	cmd := exec.CommandContext(actx, filepath.Join(c.bin, "loopwatch"), "audit", "analyze", log)
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Run(); err != nil {
		return errors.Join(fmt.Errorf("loopwatch audit analyze: %w", err), errors.New(buf.String()))
	}
	lines := strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
	if len(lines) > analyzeLines {
		lines = append(lines[:analyzeLines], fmt.Sprintf("... (%d more lines: loopwatch audit analyze %s)", len(lines)-analyzeLines, log))
	}
	fmt.Fprintln(out, strings.Join(lines, "\n"))
	return nil
}

// printAccess says how to reach the running stack and how to stop it.
func (s *Scene) printAccess(out io.Writer) {
	fmt.Fprintf(out, `
== the stack keeps running (KEEP=1)
Prometheus:        %s   (alerts: %s/alerts)
exporter metrics:  curl --cacert %s --cert %s --key %s https://%s/metrics
operator metrics:  %s
kubeconfig:        export KUBECONFIG=%s   (cluster admin; namespace %s)
logs and files:    %s
Stop it with Ctrl-C here, or: kill -INT %d
`, s.prom.URL(), s.prom.URL(), s.c.tls.caFile, s.c.tls.clientCert, s.c.tls.clientKey, s.c.exporterAddr, s.podURLs(), s.c.AdminKubeconfig(), s.Namespace, s.c.dir, os.Getpid())
}

func (s *Scene) podURLs() string {
	var urls []string
	for _, p := range s.pods {
		if p.running() {
			urls = append(urls, "http://"+p.addr+"/metrics ("+p.name+")")
		}
	}
	if len(urls) == 0 {
		return "none running"
	}
	return strings.Join(urls, ", ")
}
