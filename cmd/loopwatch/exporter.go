package main

import "github.com/loopwatch/loopwatch/exporter/cli"

func init() {
	extraCommands = append(extraCommands, cli.NewExporterCommand, cli.NewAuditCommand)
}
