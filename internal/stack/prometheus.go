package stack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"sigs.k8s.io/yaml"
)

// PrometheusOptions configures StartPrometheus.
type PrometheusOptions struct {
	// RuleFiles are rule files (paths or globs) Prometheus loads.
	RuleFiles []string
	// Targets are the static scrape jobs.
	Targets []ScrapeTarget
	// ScrapeInterval is the global scrape interval (and timeout); default 1s.
	ScrapeInterval time.Duration
	// EvaluationInterval is the global rule evaluation interval; default 1s.
	EvaluationInterval time.Duration
	// ScrapeSelf adds Prometheus' own /metrics as job "prometheus". Off by default so a test's
	// series come only from its own targets.
	ScrapeSelf bool
	// StartTimeout bounds the start; default 60s.
	StartTimeout time.Duration
	// DataDir is the TSDB directory, for a Prometheus started on existing blocks; default a
	// new directory inside Dir.
	DataDir string
	// Args are appended to Prometheus' command line (feature flags, TSDB settings).
	Args []string
	// Env is added to the environment Prometheus inherits (GODEBUG=gctrace=1 writes a line
	// per garbage collection cycle to its log).
	Env []string
	// OneEvaluationInterval evaluates every rule group at EvaluationInterval, dropping the
	// groups' own intervals as promtool does: a test that compresses time gets a group that
	// runs every 30 minutes in production (loopwatch.slo.coarse.rules) evaluated too.
	OneEvaluationInterval bool
	// Backfill are OpenMetrics files (samples with timestamps, ending in "# EOF") turned into
	// TSDB blocks with `promtool tsdb create-blocks-from openmetrics` before Prometheus starts:
	// history that 5-minute rates can read from the first query.
	Backfill []string
}

// ScrapeTarget is one static scrape job.
type ScrapeTarget struct {
	// Job is the job label.
	Job string
	// Addresses are the targets' host:port.
	Addresses []string
	// Labels are added to every series scraped from these targets. Several ScrapeTargets may
	// share a Job (with different Labels) when they have no TLS or auth settings.
	Labels map[string]string
	// Scheme is "http" (default) or "https".
	Scheme string
	// MetricsPath defaults to /metrics.
	MetricsPath string
	// TLS configures https targets.
	TLS *TLSFiles
	// BearerTokenFile holds a token sent as "Authorization: Bearer".
	BearerTokenFile string
	// Histograms is how Prometheus stores the targets' histograms; default HistogramsClassic.
	Histograms HistogramIngestion
	// MetricRelabelConfigs are the job's metric_relabel_configs, each as Prometheus'
	// configuration spells it (decoded YAML).
	MetricRelabelConfigs []map[string]any
}

// HistogramIngestion is a scrape configuration's choice of which series Prometheus stores for a
// histogram that a target exposes both classic and native, as controller-runtime does.
type HistogramIngestion string

const (
	// HistogramsClassic stores the classic _bucket, _count and _sum series, and the native
	// histogram too if one is ever scraped (always_scrape_classic_histograms).
	HistogramsClassic HistogramIngestion = ""
	// HistogramsNativeOnly stores the native histogram only (scrape_native_histograms without
	// always_scrape_classic_histograms).
	HistogramsNativeOnly HistogramIngestion = "native-only"
	// HistogramsNHCBOnly converts the classic histogram into a native histogram with custom
	// buckets and stores only that (convert_classic_histograms_to_nhcb without
	// always_scrape_classic_histograms).
	HistogramsNHCBOnly HistogramIngestion = "nhcb-only"
)

// TLSFiles are the files of a scrape job's TLS client configuration.
type TLSFiles struct {
	CAFile             string
	CertFile           string
	KeyFile            string
	InsecureSkipVerify bool
}

// Prometheus is a running Prometheus server.
type Prometheus struct {
	dir  string
	url  string
	api  promv1.API
	http *http.Client
	proc *process
	// targets is how many scrape targets the configuration names.
	targets int
}

// StartPrometheus writes a configuration for opts and starts Prometheus on a free loopback port
// in a new temporary directory, returning once it reports ready. The caller must Stop it.
func StartPrometheus(ctx context.Context, opts PrometheusOptions) (p *Prometheus, err error) {
	if opts.ScrapeInterval == 0 {
		opts.ScrapeInterval = time.Second
	}
	if opts.EvaluationInterval == 0 {
		opts.EvaluationInterval = time.Second
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 60 * time.Second
	}
	bin, err := LookPath("prometheus")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "loopwatch-prometheus-")
	if err != nil {
		return nil, fmt.Errorf("create prometheus directory: %w", err)
	}
	addr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	p = &Prometheus{dir: dir, url: "http://" + addr, http: &http.Client{Timeout: 10 * time.Second}}
	defer func() {
		if err != nil {
			err = errors.Join(err, p.Stop())
			p = nil
		}
	}()
	if opts.ScrapeSelf {
		opts.Targets = append(opts.Targets, ScrapeTarget{Job: "prometheus", Addresses: []string{addr}})
	}
	if opts.OneEvaluationInterval {
		if opts.RuleFiles, err = withoutGroupIntervals(opts.RuleFiles, filepath.Join(dir, "rules")); err != nil {
			return p, err
		}
	}
	for _, t := range opts.Targets {
		p.targets += len(t.Addresses)
	}
	config, err := prometheusConfig(opts)
	if err != nil {
		return p, err
	}
	configPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(configPath, config, 0o600); err != nil {
		return p, fmt.Errorf("write prometheus config: %w", err)
	}
	client, err := promapi.NewClient(promapi.Config{Address: p.url})
	if err != nil {
		return p, fmt.Errorf("build prometheus client: %w", err)
	}
	p.api = promv1.NewAPI(client)
	dataDir := opts.DataDir
	if dataDir == "" {
		dataDir = filepath.Join(dir, "data")
	}
	for _, f := range opts.Backfill {
		if err := backfill(ctx, f, dataDir); err != nil {
			return p, err
		}
	}
	args := []string{
		"--config.file=" + configPath,
		"--storage.tsdb.path=" + dataDir,
		"--web.listen-address=" + addr,
		"--web.enable-lifecycle",
		"--log.level=info",
	}
	args = append(args, opts.Args...)
	proc, err := startProcess("prometheus", bin, args, opts.Env, filepath.Join(dir, "prometheus.log"))
	if err != nil {
		return p, err
	}
	p.proc = proc
	return p, proc.waitReady(ctx, opts.StartTimeout, func(ctx context.Context) error {
		return HTTPOK(ctx, p.http, p.url+"/-/ready")
	})
}

// backfill writes the samples of an OpenMetrics file as TSDB blocks into dataDir.
func backfill(ctx context.Context, file, dataDir string) error {
	promtool, err := LookPath("promtool")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, promtool, "tsdb", "create-blocks-from", "openmetrics", file, dataDir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("backfill %s: %w: %s", file, err, out)
	}
	return nil
}

// prometheusConfig renders opts as prometheus.yml. Classic histogram buckets are always scraped:
// the generated rules and dashboards use histogram_quantile over _bucket series.
func prometheusConfig(opts PrometheusOptions) ([]byte, error) {
	type tlsConfig struct {
		CAFile             string `json:"ca_file,omitempty"`
		CertFile           string `json:"cert_file,omitempty"`
		KeyFile            string `json:"key_file,omitempty"`
		InsecureSkipVerify bool   `json:"insecure_skip_verify,omitempty"`
	}
	type authorization struct {
		CredentialsFile string `json:"credentials_file"`
	}
	type staticConfig struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels,omitempty"`
	}
	type scrapeConfig struct {
		JobName                       string           `json:"job_name"`
		Scheme                        string           `json:"scheme,omitempty"`
		MetricsPath                   string           `json:"metrics_path,omitempty"`
		AlwaysScrapeClassicHistograms bool             `json:"always_scrape_classic_histograms"`
		ScrapeNativeHistograms        bool             `json:"scrape_native_histograms,omitempty"`
		ConvertClassicToNHCB          bool             `json:"convert_classic_histograms_to_nhcb,omitempty"`
		TLSConfig                     *tlsConfig       `json:"tls_config,omitempty"`
		Authorization                 *authorization   `json:"authorization,omitempty"`
		MetricRelabelConfigs          []map[string]any `json:"metric_relabel_configs,omitempty"`
		StaticConfigs                 []staticConfig   `json:"static_configs"`
	}
	type global struct {
		ScrapeInterval     string `json:"scrape_interval"`
		ScrapeTimeout      string `json:"scrape_timeout"`
		EvaluationInterval string `json:"evaluation_interval"`
	}
	type config struct {
		Global        global         `json:"global"`
		RuleFiles     []string       `json:"rule_files,omitempty"`
		ScrapeConfigs []scrapeConfig `json:"scrape_configs"`
	}
	c := config{
		Global: global{
			ScrapeInterval:     opts.ScrapeInterval.String(),
			ScrapeTimeout:      opts.ScrapeInterval.String(),
			EvaluationInterval: opts.EvaluationInterval.String(),
		},
		ScrapeConfigs: []scrapeConfig{},
	}
	for _, f := range opts.RuleFiles {
		abs, err := filepath.Abs(f)
		if err != nil {
			return nil, fmt.Errorf("rule file %q: %w", f, err)
		}
		c.RuleFiles = append(c.RuleFiles, abs)
	}
	jobs := map[string]int{} // job name -> index in c.ScrapeConfigs
	for _, t := range opts.Targets {
		if t.Job == "" || len(t.Addresses) == 0 {
			return nil, fmt.Errorf("scrape target %q: job and addresses are required", t.Job)
		}
		// Targets of one job with different labels (e.g. one pod label each) become several
		// static_configs of one scrape config: Prometheus rejects a job name used twice.
		if i, ok := jobs[t.Job]; ok {
			sc := &c.ScrapeConfigs[i]
			if sc.Scheme != t.Scheme || sc.MetricsPath != t.MetricsPath || t.Histograms != HistogramsClassic || sc.ScrapeNativeHistograms || sc.ConvertClassicToNHCB || t.TLS != nil || t.BearerTokenFile != "" || sc.TLSConfig != nil || sc.Authorization != nil || len(t.MetricRelabelConfigs) > 0 || len(sc.MetricRelabelConfigs) > 0 {
				return nil, fmt.Errorf("scrape target %q: listed twice with TLS, auth, scheme, histogram or relabeling settings; merge the addresses", t.Job)
			}
			sc.StaticConfigs = append(sc.StaticConfigs, staticConfig{Targets: t.Addresses, Labels: t.Labels})
			continue
		}
		jobs[t.Job] = len(c.ScrapeConfigs)
		sc := scrapeConfig{
			JobName:                       t.Job,
			Scheme:                        t.Scheme,
			MetricsPath:                   t.MetricsPath,
			AlwaysScrapeClassicHistograms: t.Histograms == HistogramsClassic,
			ScrapeNativeHistograms:        t.Histograms == HistogramsNativeOnly,
			ConvertClassicToNHCB:          t.Histograms == HistogramsNHCBOnly,
			MetricRelabelConfigs:          t.MetricRelabelConfigs,
			StaticConfigs:                 []staticConfig{{Targets: t.Addresses, Labels: t.Labels}},
		}
		switch t.Histograms {
		case HistogramsClassic, HistogramsNativeOnly, HistogramsNHCBOnly:
		default:
			return nil, fmt.Errorf("scrape target %q: unknown histogram ingestion %q", t.Job, t.Histograms)
		}
		if t.TLS != nil {
			sc.TLSConfig = &tlsConfig{CAFile: t.TLS.CAFile, CertFile: t.TLS.CertFile, KeyFile: t.TLS.KeyFile, InsecureSkipVerify: t.TLS.InsecureSkipVerify}
		}
		if t.BearerTokenFile != "" {
			sc.Authorization = &authorization{CredentialsFile: t.BearerTokenFile}
		}
		c.ScrapeConfigs = append(c.ScrapeConfigs, sc)
	}
	out, err := yaml.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("render prometheus config: %w", err)
	}
	return out, nil
}

// Stop stops Prometheus (SIGKILL after a grace period). The directory is kept.
func (p *Prometheus) Stop() error {
	if p.proc == nil {
		return nil
	}
	return p.proc.stop(10 * time.Second)
}

// Reload makes Prometheus re-read its configuration and rule files (POST /-/reload).
func (p *Prometheus) Reload(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url+"/-/reload", nil)
	if err != nil {
		return err
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return fmt.Errorf("reload prometheus: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("reload prometheus: %s: %s", resp.Status, body)
	}
	return nil
}

// URL is Prometheus' base URL, http://127.0.0.1:<port>.
func (p *Prometheus) URL() string { return p.url }

// API is a client_golang API client for this Prometheus.
func (p *Prometheus) API() promv1.API { return p.api }

// Dir is the working directory: configuration, TSDB and log file.
func (p *Prometheus) Dir() string { return p.dir }

// Started is when the Prometheus process was started (zero before): what the Go runtime's
// gctrace lines in its log count from.
func (p *Prometheus) Started() time.Time {
	if p.proc == nil {
		return time.Time{}
	}
	return p.proc.started
}

// Logs maps "prometheus" to its log file.
func (p *Prometheus) Logs() map[string]string {
	if p.proc == nil {
		return map[string]string{}
	}
	return map[string]string{p.proc.name: p.proc.logPath}
}

// withoutGroupIntervals copies the rule files (paths or globs) into dir without their groups'
// own evaluation intervals, and returns the copies' paths.
func withoutGroupIntervals(files []string, dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	var out []string
	for _, pattern := range files {
		paths, err := filepath.Glob(pattern)
		if err != nil {
			return nil, fmt.Errorf("rule files %q: %w", pattern, err)
		}
		for _, path := range paths {
			data, err := os.ReadFile(path)
			if err != nil {
				return nil, err
			}
			var doc map[string]any
			if err := yaml.Unmarshal(data, &doc); err != nil {
				return nil, fmt.Errorf("rule file %s: %w", path, err)
			}
			groups, _ := doc["groups"].([]any)
			for _, g := range groups {
				if g, ok := g.(map[string]any); ok {
					delete(g, "interval")
				}
			}
			data, err = yaml.Marshal(doc)
			if err != nil {
				return nil, err
			}
			dst := filepath.Join(dir, fmt.Sprintf("%d-%s", len(out), filepath.Base(path)))
			if err := os.WriteFile(dst, data, 0o600); err != nil {
				return nil, err
			}
			out = append(out, dst)
		}
	}
	return out, nil
}
