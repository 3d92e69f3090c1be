package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/loopwatch/loopwatch/gen"
)

func newGenCommand() *cobra.Command {
	var configPath, out string
	cmd := &cobra.Command{
		Use:   "gen",
		Short: "Generate rules, PrometheusRule manifests, dashboards and the jsonnet mixin",
		Long: `gen builds one typed model from a config file (every field optional: the defaults
serve any controller-runtime controller scraped by Prometheus) and writes:

  rules/loopwatch.rules.yaml               Prometheus recording and alerting rules
  rules/loopwatch.prometheusrule.yaml      the same rules as a PrometheusRule (monitoring.coreos.com/v1)
  dashboards/loopwatch-*.json              Grafana dashboards (import as they are: the data source
                                           variable starts on Grafana's default data source)
  dashboards/loopwatch-dashboards.configmap.yaml   the dashboards as ConfigMaps for the Grafana sidecar
  jsonnet/                                 a monitoring mixin with the same content and a _config
  testrules/*.test.yaml                    promtool unit tests of these rules, for this config:
                                           run "promtool test rules testrules/*.test.yaml" in CI

Every alert of the config is tested at its own thresholds and for: durations (it must be silent
one evaluation before its for: boundary and fire at it) and on healthy input that must stay
silent; every recording rule is tested on known input. An invalid config lists every problem
with its field path and exits non-zero. Every setting is described in docs/configuration.md.`,
		Example: `  # regenerate the committed outputs in this repository
  loopwatch gen --out .

  # outputs for your own controllers, in a directory of your choice
  loopwatch gen --config loopwatch.yaml --out ./monitoring

  # a config overriding a selector and a threshold
  cat > loopwatch.yaml <<'YAML'
  selectors:
    controller: job="backup-operator"
  alerts:
    queueBacklog: {depth: 500, for: 30m}
  YAML`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := gen.Load(configPath)
			if err != nil {
				return err
			}
			m, err := gen.Build(cfg)
			if err != nil {
				return err
			}
			files, err := m.Files()
			if err != nil {
				return err
			}
			if err := gen.WriteFiles(out, files); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %d files under %s\n", len(files), out)
			return nil
		},
	}
	cmd.Flags().StringVarP(&configPath, "config", "c", "", "config file (YAML); defaults are used when empty")
	cmd.Flags().StringVarP(&out, "out", "o", ".", "output directory (rules/, dashboards/ and jsonnet/ are written under it)")
	_ = cmd.MarkFlagFilename("config", "yaml", "yml")
	_ = cmd.MarkFlagDirname("out")
	return cmd
}
