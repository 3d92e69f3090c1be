package main

import (
	"github.com/spf13/cobra"

	"github.com/loopwatch/loopwatch/exporter/cli"
)

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "loopwatch",
		Short: "Observability for Kubernetes controllers: rules, dashboards, audit exporter",
		Long: `loopwatch makes controller failures visible: queues falling behind, N+1 API calls,
hot loops, write fights between controllers, replicas racing without leader election,
stuck finalizers.

  gen               generate Prometheus rules, PrometheusRule manifests, Grafana dashboards
                    and a jsonnet mixin from one config
  exporter          receive the API server's audit webhook and export per-actor write metrics
  audit analyze     post-mortem report of an audit log file: fights, hot objects, races
  diagnose          walk the controller playbook over Prometheus data: a verdict per controller
  version           print the version`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newGenCommand(), cli.NewExporterCommand(), cli.NewAuditCommand(), newDiagnoseCommand(), newVersionCommand())
	return root
}
