// Package cli holds the `loopwatch exporter` and `loopwatch audit` commands.
package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/loopwatch/loopwatch/exporter"
	"github.com/loopwatch/loopwatch/exporter/analyze"
	"github.com/loopwatch/loopwatch/exporter/track"
)

// trackerFlags binds the detection thresholds and bounds shared by both commands.
func trackerFlags(fs *pflag.FlagSet) *track.Config {
	d := track.DefaultConfig()
	c := &track.Config{}
	fs.IntVar(&c.TopK, "top-k", d.TopK, "actors that get their own label value; the rest are \"other\"")
	fs.DurationVar(&c.DecayInterval, "decay-interval", d.DecayInterval, "interval at which actor activity counts are halved and labels rebalanced")
	fs.IntVar(&c.FightHandoffs, "fight-handoffs", d.FightHandoffs, "handoffs between two actors on one object that make a fight")
	fs.DurationVar(&c.FightWindow, "fight-window", d.FightWindow, "window in which the fight handoffs must happen")
	fs.IntVar(&c.HotWrites, "hot-writes", d.HotWrites, "writes by one actor to one object that make it hot")
	fs.DurationVar(&c.HotWindow, "hot-window", d.HotWindow, "window in which the hot writes must happen")
	fs.DurationVar(&c.RaceWindow, "race-window", d.RaceWindow, "writes to one object by two pods of one actor this close together are a replica race")
	fs.IntVar(&c.MaxObjects, "max-objects", d.MaxObjects, "objects with per-object state (fixed table, evicts the least recently written)")
	fs.DurationVar(&c.ObjectTTL, "object-ttl", d.ObjectTTL, "how long an object nobody writes keeps its state")
	fs.IntVar(&c.MaxOffenders, "max-offenders", d.MaxOffenders, "entries per top-offender table (fights, hot objects, races)")
	fs.DurationVar(&c.OffenderTTL, "offender-ttl", d.OffenderTTL, "how long an offender stays exposed after its last write")
	return c
}

func newLogger(w io.Writer, debug bool) *slog.Logger {
	level := slog.LevelInfo
	if debug {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
}

// NewExporterCommand returns `loopwatch exporter`: the audit webhook endpoint and /metrics.
func NewExporterCommand() *cobra.Command {
	var (
		srv          exporter.ServerConfig
		dedupeSize   int
		ingestFile   string
		maxLineBytes int
		debug        bool
	)
	cmd := &cobra.Command{
		Use:   "exporter",
		Short: "Receive Kubernetes audit events and export per-actor writes, fights, hot objects and replica races",
		Long: `Serves the audit webhook (POST of an audit.k8s.io/v1 EventList, as kube-apiserver's
--audit-webhook-config-file sends it) over TLS, authenticating the sender by client certificate
and/or bearer token, and exposes the metrics on /metrics (plus /healthz and /readyz).

With --ingest-file it reads an audit log in the log backend's JSON-lines format (or stdin with
"-") and then keeps serving /metrics; the webhook is then served only when credentials are set.`,
		Args: cobra.NoArgs,
	}
	fs := cmd.Flags()
	tcfg := trackerFlags(fs)
	fs.StringVar(&srv.Addr, "listen-address", ":8443", "address to serve the webhook and /metrics on")
	fs.StringVar(&srv.TLSCertFile, "tls-cert-file", "", "serving certificate (PEM)")
	fs.StringVar(&srv.TLSKeyFile, "tls-key-file", "", "serving key (PEM)")
	fs.StringVar(&srv.ClientCAFile, "client-ca-file", "", "CA bundle (PEM) that signs the API server's webhook client certificate")
	fs.StringVar(&srv.TokenFile, "token-file", "", "file holding the bearer token the API server presents")
	fs.BoolVar(&srv.InsecureHTTP, "insecure-http", false, "serve plain HTTP (local experiments only; the token is then sent in clear)")
	fs.Int64Var(&srv.MaxBodyBytes, "max-body-bytes", exporter.DefaultMaxBodyBytes, "largest webhook body accepted (413 beyond)")
	fs.IntVar(&srv.MaxInFlight, "max-in-flight", 4, "batches processed at once")
	fs.DurationVar(&srv.QueueWait, "queue-wait", time.Second, "how long a batch waits for a free slot before it is answered 429 (the API server retries)")
	fs.IntVar(&dedupeSize, "dedupe-size", exporter.DefaultDedupeSize, "auditID+stage pairs remembered per generation to drop retried events (two generations)")
	fs.StringVar(&ingestFile, "ingest-file", "", `audit log (JSON lines) to ingest, "-" for stdin`)
	fs.IntVar(&maxLineBytes, "max-line-bytes", exporter.DefaultMaxLineBytes, "longest audit log line ingested")
	fs.BoolVar(&debug, "debug", false, "debug logging")

	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		log := newLogger(cmd.ErrOrStderr(), debug)
		ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		e, err := exporter.New(exporter.Config{Tracker: *tcfg, DedupeSize: dedupeSize, Registerer: reg, Logger: log})
		if err != nil {
			return err
		}
		srv.Gatherer, srv.Logger = reg, log
		if ingestFile != "" {
			if err := ingest(ctx, e, ingestFile, maxLineBytes, cmd.InOrStdin()); err != nil {
				return err
			}
			log.Info("Ingested audit log", "file", ingestFile)
			srv.DisableWebhook = srv.ClientCAFile == "" && srv.TokenFile == ""
		}
		s, err := exporter.NewServer(srv, e)
		if err != nil {
			return err
		}
		return s.ListenAndServe(ctx)
	}
	return cmd
}

func ingest(ctx context.Context, e *exporter.Exporter, file string, maxLineBytes int, stdin io.Reader) error {
	r := stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return fmt.Errorf("open audit log: %w", err)
		}
		defer f.Close()
		r = f
	}
	done := make(chan error, 1)
	go func() { done <- e.IngestLines(r, maxLineBytes) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// NewAuditCommand returns `loopwatch audit` with its `analyze` subcommand.
func NewAuditCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Work with Kubernetes audit logs",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newAnalyzeCommand())
	return cmd
}

func newAnalyzeCommand() *cobra.Command {
	var (
		output     string
		topWriters int
	)
	cmd := &cobra.Command{
		Use:   "analyze FILE",
		Short: "Post-mortem report of an audit log: top writers, fights, hot objects, replica races, conflicts",
		Long: `Reads an audit log in the log backend's JSON-lines format (FILE, or "-" for stdin; lines
holding a webhook EventList are read too) and reports the top writers, fights with both actors,
their handoff counts and time span, hot objects, replica races with pod names, and conflicts.
The output is deterministic.`,
		Args: cobra.ExactArgs(1),
	}
	fs := cmd.Flags()
	tcfg := trackerFlags(fs)
	fs.StringVarP(&output, "output", "o", "text", "output format: text or json")
	fs.IntVar(&topWriters, "top-writers", 20, "writers listed in the report")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if output != "text" && output != "json" {
			return fmt.Errorf("unknown output format %q: want text or json", output)
		}
		r := cmd.InOrStdin()
		if args[0] != "-" {
			f, err := os.Open(args[0])
			if err != nil {
				return fmt.Errorf("open audit log: %w", err)
			}
			defer f.Close()
			r = f
		}
		rep, err := analyze.Analyze(r, analyze.Options{Tracker: *tcfg, TopWriters: topWriters})
		if err != nil {
			return fmt.Errorf("analyze %q: %w", args[0], err)
		}
		if output == "json" {
			return rep.WriteJSON(cmd.OutOrStdout())
		}
		return rep.WriteText(cmd.OutOrStdout())
	}
	return cmd
}
