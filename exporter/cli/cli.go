// Package cli holds the `loopwatch exporter` and `loopwatch audit` commands.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	runtimedebug "runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/loopwatch/loopwatch/exporter"
	"github.com/loopwatch/loopwatch/exporter/analyze"
	"github.com/loopwatch/loopwatch/exporter/decode"
	"github.com/loopwatch/loopwatch/exporter/dedupe"
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
	fs.DurationVar(&c.ReorderWait, "reorder-wait", d.ReorderWait, "how long writes wait before fights, hot objects and races take them in the order they happened: at least the API server's --audit-webhook-batch-max-wait plus one --audit-webhook-initial-backoff (+20%); later writes are counted late; negative: arrival order")
	fs.Int64Var(&c.MaxReorderBytes, "max-reorder-bytes", d.MaxReorderBytes, "bytes of writes waiting for their turn (beyond, the oldest is taken early and counted)")
	return c
}

func newLogger(w io.Writer, debug bool) *slog.Logger {
	level := slog.LevelInfo
	if debug {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
}

// ExporterOptions are what the flags of `loopwatch exporter` set.
type ExporterOptions struct {
	Exporter     exporter.Config
	Server       exporter.ServerConfig
	IngestFile   string
	MaxLineBytes int
	Debug        bool
	// tracker is what the tracker flags set, copied into Exporter once they are parsed.
	tracker *track.Config
	// managed are the managed-cluster sources' flags, replicas the replicas'.
	managed  managedFlags
	replicas replicaFlags
}

// ParseExporterArgs parses args (without the subcommand) as `loopwatch exporter` does: the deploy
// files' tests check their flags and derive the memory bound from them.
func ParseExporterArgs(args []string) (ExporterOptions, error) {
	cmd, opts := newExporterCommand()
	if err := cmd.Flags().Parse(args); err != nil {
		return ExporterOptions{}, err
	}
	opts.Exporter.Tracker = *opts.tracker
	opts.Exporter.Replicas = opts.replicas.enabled
	opts.Server.Firehose, opts.Server.PubSub = opts.managed.firehose(), opts.managed.pubSub()
	return *opts, nil
}

// NewExporterCommand returns `loopwatch exporter`: the audit webhook endpoint and /metrics.
func NewExporterCommand() *cobra.Command {
	cmd, _ := newExporterCommand()
	return cmd
}

func newExporterCommand() (*cobra.Command, *ExporterOptions) {
	opts := &ExporterOptions{}
	srv, ecfg := &opts.Server, &opts.Exporter
	ingestFile, maxLineBytes, debug := &opts.IngestFile, &opts.MaxLineBytes, &opts.Debug
	m := &opts.managed
	cmd := &cobra.Command{
		Use:   "exporter",
		Short: "Receive Kubernetes audit events and export per-actor writes, fights, hot objects and replica races",
		Long: `Serves the audit webhook (POST of an audit.k8s.io/v1 EventList, as kube-apiserver's
--audit-webhook-config-file sends it) over TLS, authenticating the sender by client certificate
and/or bearer token, and exposes the metrics on /metrics (plus /healthz and /readyz).

With --ingest-file it reads an audit log in the log backend's JSON-lines format (or stdin with
"-") and then keeps serving /metrics; the webhook is then served only when credentials are set.

On managed clusters, where no one can set the API server's audit webhook, it takes the audit
events the provider hands out instead (README "Managed clusters"): EKS's through Amazon Data
Firehose (--firehose-access-key-file, path /firehose), GKE's through a Pub/Sub push subscription
(--pubsub-audience and/or --pubsub-secret-file, path /pubsub), AKS's from an Event Hub through
its Kafka endpoint (--eventhub-brokers, --eventhub-name, --eventhub-connection-string-file).`,
		Args: cobra.NoArgs,
	}
	fs := cmd.Flags()
	tcfg := trackerFlags(fs)
	opts.tracker = tcfg
	fs.StringVar(&srv.Addr, "listen-address", ":8443", "address to serve the webhook and /metrics on")
	fs.StringVar(&srv.TLSCertFile, "tls-cert-file", "", "serving certificate (PEM)")
	fs.StringVar(&srv.TLSKeyFile, "tls-key-file", "", "serving key (PEM)")
	fs.StringVar(&srv.ClientCAFile, "client-ca-file", "", "CA bundle (PEM) that signs the API server's webhook client certificate")
	fs.StringVar(&srv.TokenFile, "token-file", "", "file holding the bearer token the API server presents")
	fs.StringVar(&srv.MetricsClientCAFile, "metrics-client-ca-file", "", "CA bundle (PEM) of client certificates /metrics accepts besides the webhook's credentials")
	fs.StringVar(&srv.MetricsTokenFile, "metrics-token-file", "", "file holding a bearer token /metrics accepts besides the webhook's credentials")
	fs.BoolVar(&srv.MetricsOpen, "metrics-open", false, "serve /metrics without authentication (it names users and objects)")
	fs.BoolVar(&srv.InsecureHTTP, "insecure-http", false, "serve plain HTTP (local experiments only; the token is then sent in clear)")
	fs.Int64Var(&srv.MaxBodyBytes, "max-body-bytes", exporter.DefaultMaxBodyBytes, "largest webhook body accepted (413 beyond); keep the API server's --audit-webhook-truncate-max-batch-size below it")
	fs.Int64Var(&srv.MaxBufferedBytes, "max-buffered-bytes", exporter.DefaultMaxBufferedBytes, "bytes of bodies received or processed at once (429 beyond); more than --max-body-bytes")
	fs.IntVar(&srv.MaxInFlight, "max-in-flight", exporter.DefaultMaxInFlight, "batches decoded and tracked at once (their bodies already received)")
	fs.DurationVar(&srv.QueueWait, "queue-wait", time.Second, "how long a batch waits for room or a slot before it is answered 429 (the API server retries)")
	fs.Int64Var(&srv.MinBodyBytesPerSecond, "min-body-rate", exporter.DefaultMinBodyBytesPerSecond, "slowest average rate in bytes/s a body may arrive at, after --body-grace (slower senders get 408)")
	fs.DurationVar(&srv.BodyGrace, "body-grace", exporter.DefaultBodyGrace, "time a body gets before --min-body-rate applies")
	fs.DurationVar(&srv.BodyTimeout, "body-timeout", exporter.DefaultBodyTimeout, "longest time a body may take to arrive")
	fs.IntVar(&srv.MaxConnections, "max-connections", exporter.DefaultMaxConnections, "open connections (more are closed at once)")
	fs.DurationVar(&srv.ShutdownTimeout, "shutdown-timeout", exporter.DefaultShutdownTimeout, "graceful shutdown bound; bodies still arriving are answered 503 at once")
	fs.IntVar(&ecfg.DedupeSize, "dedupe-size", exporter.DefaultDedupeSize, "events remembered per generation to drop retried ones (two generations)")
	fs.IntVar(&ecfg.MaxBatchEvents, "max-batch-events", exporter.DefaultMaxBatchEvents, "events in one webhook batch (413 beyond)")
	fs.IntVar(&ecfg.MaxValueBytes, "max-value-bytes", decode.DefaultMaxValueBytes, "longest string kept from an event, so longest label value: longer ones keep a prefix and a hash")
	fs.IntVar(&ecfg.MaxSeries, "max-series", exporter.DefaultMaxSeries, "series of each per-actor metric; beyond it new ones count under actor and resource \"other\"")
	fs.StringVar(ingestFile, "ingest-file", "", `audit log (JSON lines) to ingest, "-" for stdin`)
	fs.IntVar(maxLineBytes, "max-line-bytes", exporter.DefaultMaxLineBytes, "longest audit log line ingested")
	fs.BoolVar(debug, "debug", false, "debug logging")
	m.bind(fs)
	rf := &opts.replicas
	rf.bind(fs)

	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		log := newLogger(cmd.ErrOrStderr(), *debug)
		ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		ecfg.Tracker, ecfg.Registerer, ecfg.Logger = *tcfg, reg, log
		ecfg.Replicas = rf.enabled
		srv.Firehose, srv.PubSub = m.firehose(), m.pubSub()
		bound, err := exporter.MemoryBound(*ecfg, *srv)
		if err != nil {
			return err
		}
		if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
			// The garbage collector then works harder near the bound instead of letting the heap
			// grow to twice what is live.
			runtimedebug.SetMemoryLimit(bound.Total())
		}
		log.Info("Memory bound", "dedupe", bound.Dedupe, "tracker", bound.Tracker, "reorder", bound.Reorder, "bodies", bound.Bodies,
			"decoders", bound.Decoders, "series", bound.Series, "connections", bound.Connections, "sources", bound.Sources,
			"replication", bound.Replication, "total", bound.Total())
		e, err := exporter.New(*ecfg)
		if err != nil {
			return err
		}
		srv.Gatherer, srv.Logger = reg, log
		reader, err := m.eventHub(e, ecfg.MaxValueBytes, log)
		if err != nil {
			return err
		}
		if *ingestFile != "" {
			if err := ingest(ctx, e, *ingestFile, *maxLineBytes, cmd.InOrStdin()); err != nil {
				return err
			}
			log.Info("Ingested audit log", "file", *ingestFile)
		}
		if *ingestFile != "" || m.any() {
			srv.DisableWebhook = srv.ClientCAFile == "" && srv.TokenFile == ""
		}
		var el *election
		if rf.enabled {
			if el, err = rf.setup(e, srv, *ingestFile != "", m.any(), log); err != nil {
				return err
			}
		}
		s, err := exporter.NewServer(*srv, e)
		if err != nil {
			return err
		}
		if el != nil {
			// A leader that loses its lease stops counting and exits, to come back as a
			// standby (a controller does the same); a standby follows the new leader.
			ctx, cancel := context.WithCancelCause(ctx)
			defer cancel(nil)
			el.start(func(err error) { cancel(err) })
			err := s.ListenAndServe(ctx)
			el.release()
			if cause := context.Cause(ctx); err == nil && cause != nil && cause != context.Canceled {
				err = cause
			}
			return err
		}
		if reader == nil {
			return s.ListenAndServe(ctx)
		}
		// The exporter stops with its source: a reader that ends on its own (credentials refused)
		// would otherwise leave a server that answers ready and receives nothing.
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		done := make(chan error, 1)
		go func() {
			err := reader.Run(ctx)
			if err == nil && ctx.Err() == nil {
				err = errors.New("the event hub reader stopped")
			}
			cancel()
			done <- err
		}()
		err = s.ListenAndServe(ctx)
		cancel()
		return errors.Join(err, <-done)
	}
	return cmd, opts
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
		htmlFile   string
		topWriters int
		opts       analyze.Options
	)
	cmd := &cobra.Command{
		Use:   "analyze LOG...",
		Short: "Post-mortem report of an audit log: top writers, fights, hot objects, replica races, conflicts",
		Long: `Reads an audit log in the log backend's JSON-lines format (FILE, or "-" for stdin; any
version from audit.k8s.io/v1beta1; lines holding a webhook EventList are read too) and reports
the top writers, fights with both actors, their handoff counts and time span, hot objects,
replica races with pod names, and conflicts. It counts what the exporter counts: repeated events
(overlapping log files) once. Lines it does not understand (malformed, another format such as a
cloud provider's log entry) are counted and the first few listed by line number. The output is
deterministic.

Several logs (those of several API servers, or consecutive files of one) are read one after
another as one; events repeated across them count once, and skipped lines are numbered from the
start of each log.

--html FILE also writes the report as one self-contained HTML page (no script, style or font
from the network; it opens from file:// and prints): a timeline of each fight's, hot object's and
race's writes, one lane per actor or pod, the writers and readers over time, and every table,
sortable. Its size is bounded whatever the log's (docs/post-mortem.md). With --html, the text
or JSON report is printed only when -o is given.`,
		Example: `  loopwatch audit analyze /var/log/kubernetes/audit.log
  loopwatch audit analyze --html incident.html audit-1.log audit-2.log.gz
  loopwatch audit analyze -o json audit.log`,
		Args: cobra.MinimumNArgs(1),
	}
	fs := cmd.Flags()
	tcfg := trackerFlags(fs)
	fs.StringVarP(&output, "output", "o", "text", "output format: text or json")
	fs.StringVar(&htmlFile, "html", "", "also write the report as a self-contained HTML page to this file")
	fs.IntVar(&topWriters, "top-writers", 20, "writers listed in the report")
	fs.IntVar(&opts.DedupeSize, "dedupe-size", dedupe.DefaultSize, "events remembered per generation to drop repeats (two generations; repeats farther apart are counted again)")
	fs.IntVar(&opts.MaxValueBytes, "max-value-bytes", decode.DefaultMaxValueBytes, "longest string kept from an event: longer ones keep a prefix and a hash")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if output != "text" && output != "json" {
			return fmt.Errorf("unknown output format %q: want text or json", output)
		}
		logs := make([]io.Reader, 0, len(args))
		for _, a := range args {
			if a == "-" {
				logs = append(logs, cmd.InOrStdin())
				continue
			}
			f, err := os.Open(a)
			if err != nil {
				return fmt.Errorf("open audit log: %w", err)
			}
			defer f.Close()
			logs = append(logs, f)
		}
		opts.Tracker, opts.TopWriters = *tcfg, topWriters
		opts.Timelines = htmlFile != ""
		rep, err := analyze.AnalyzeAll(logs, opts)
		if err != nil {
			return fmt.Errorf("analyze %q: %w", strings.Join(args, " "), err)
		}
		if htmlFile != "" {
			if err := writeHTML(rep, htmlFile); err != nil {
				return err
			}
			if !cmd.Flags().Changed("output") {
				fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s: %d events, %d fights, %d hot objects, %d replica races\n",
					htmlFile, rep.Events, len(rep.Fights), len(rep.HotObjects), len(rep.Races))
				return nil
			}
		}
		if output == "json" {
			return rep.WriteJSON(cmd.OutOrStdout())
		}
		return rep.WriteText(cmd.OutOrStdout())
	}
	return cmd
}

// writeHTML writes the HTML report to path.
func writeHTML(rep *analyze.Report, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write html report: %w", err)
	}
	if err := rep.WriteHTML(f); err != nil {
		_ = f.Close()
		return fmt.Errorf("write html report %q: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write html report %q: %w", path, err)
	}
	return nil
}
