package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/loopwatch/loopwatch/diagnose"
	"github.com/loopwatch/loopwatch/gen"
)

func newDiagnoseCommand() *cobra.Command {
	var (
		opts       diagnose.Options
		configPath string
		output     string
	)
	cmd := &cobra.Command{
		Use:   "diagnose --prometheus URL",
		Short: "Walk the controller playbook over Prometheus data and say what is wrong with each controller",
		Long: `diagnose reads a controller's metrics from Prometheus over a window and walks the playbook
an on-call engineer would: is the work queue growing (adds vs completions, depth, priority), are
reconciles slow, stuck or failing (RequeueAfter is not an error), how many API calls does a
reconcile make, is the controller hot-looping, does another actor keep overwriting its writes,
do its replicas race, is there a leader, and are the metrics there at all.

Each check is one of loopwatch's alerts, evaluated with the alert's own expression and the
thresholds of --config (the file "loopwatch gen" reads), so diagnose and the alerts agree.
It reads loopwatch's recording rules where Prometheus has them and computes them from the raw
metrics where it does not.

For every controller it prints a verdict: healthy (every check ran on data and found nothing),
insufficient data (some checks could not run), or unhealthy with the most likely cause first,
then contributing causes, then symptoms, each with its numbers, the PromQL that produced them,
the next step and the runbook. -o json writes the same as JSON (schema: docs/diagnose.md).
-o html writes one self-contained HTML page (nothing fetched from the network; it opens from
file:// and prints) with, for each finding, its evidence series over --since drawn on one time
axis, the PromQL under each chart, the next step and the runbook link.

Exit status: 0 when every controller reported is healthy and no finding is left without a
controller, 2 when a controller is unhealthy or lacks data or a finding belongs to no controller
(a write fight between actors that are not scraped controllers, an audit pipeline losing events),
1 on errors (Prometheus unreachable, no controller metrics, unknown controller).`,
		Example: `  loopwatch diagnose --prometheus http://localhost:9090
  loopwatch diagnose --prometheus http://localhost:9090 --controller backup --since 1h
  loopwatch diagnose --prometheus http://localhost:9090 --config loopwatch.yaml -o json
  loopwatch diagnose --prometheus http://localhost:9090 --since 2h -o html > diagnosis.html`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "text" && output != "json" && output != "html" {
				return fmt.Errorf("--output must be text, json or html, got %q", output)
			}
			cfg, err := gen.Load(configPath)
			if err != nil {
				return err
			}
			opts.Config = cfg
			r, err := diagnose.Run(cmd.Context(), opts)
			if err != nil {
				return err
			}
			switch output {
			case "html":
				charts, err := diagnose.FetchCharts(cmd.Context(), opts, r)
				if err != nil {
					return err
				}
				if err := r.WriteHTML(cmd.OutOrStdout(), charts); err != nil {
					return err
				}
			case "json":
				b, err := r.JSON()
				if err != nil {
					return err
				}
				if _, err := cmd.OutOrStdout().Write(b); err != nil {
					return err
				}
			default:
				if err := r.WriteText(cmd.OutOrStdout()); err != nil {
					return err
				}
			}
			if !r.AllHealthy() {
				return exitCode(2)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Prometheus, "prometheus", "", "base URL of the Prometheus HTTP API, e.g. http://localhost:9090 (required)")
	f.StringVar(&opts.Controller, "controller", "", "diagnose only the controllers of this name (the controller label)")
	f.DurationVar(&opts.Since, "since", diagnose.DefaultSince, "length of the window to look at, ending now")
	f.StringVarP(&configPath, "config", "c", "", "loopwatch config (the file `loopwatch gen` reads): selectors and thresholds; defaults when empty")
	f.StringVarP(&output, "output", "o", "text", "output format: text, json or html")
	f.DurationVar(&opts.Timeout, "timeout", diagnose.DefaultTimeout, "timeout of each request to Prometheus")
	f.Int64Var(&opts.MaxResponseBytes, "max-response-bytes", diagnose.DefaultMaxResponseBytes, "largest Prometheus response accepted")
	_ = cmd.MarkFlagRequired("prometheus")
	_ = cmd.MarkFlagFilename("config", "yaml", "yml")
	return cmd
}
