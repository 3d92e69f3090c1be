package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/loopwatch/loopwatch/gen"
	"github.com/loopwatch/loopwatch/internal/stack"
	"github.com/loopwatch/loopwatch/operator/app"
)

// Options configure a Cluster.
type Options struct {
	// Out receives the narration; default os.Stdout.
	Out io.Writer
	// Config is the generator config of the rules Prometheus loads; default Config().
	Config *gen.Config
	// KeepDir keeps the work directory when the cluster closes without a failure.
	KeepDir bool
}

// Cluster is the control plane every scene runs on: etcd and kube-apiserver, whose audit
// webhook posts to the loopwatch exporter at a fixed address (each scene starts the exporter
// afresh there) and whose audit log backend writes a file.
type Cluster struct {
	opts  Options
	cfg   gen.Config
	dir   string
	bin   string
	rules string // the generated rule file
	// configFile is the generator config the rules come from (for `loopwatch diagnose --config`).
	configFile string
	// shares are the recording rules whose values must stay within [0, 1] (checkShares).
	shares []string
	cp     *stack.ControlPlane
	kube   client.Client
	tls    *certs
	// exporterAddr is where the webhook posts; the current scene's exporter listens there.
	exporterAddr string
	exporter     *exporterProcess
	start        time.Time
	scenes       int
}

// binaries are the programs the cluster runs.
var binaries = []string{"backup-operator", "loopwatch", "kube-apiserver", "etcd", "prometheus"}

// StartCluster generates the rules and starts the control plane. Close it.
func StartCluster(ctx context.Context, opts Options) (c *Cluster, err error) {
	if opts.Out == nil {
		opts.Out = os.Stdout
	}
	cfg := Config()
	if opts.Config != nil {
		cfg = *opts.Config
	}
	bin, err := stack.BinDir()
	if err != nil {
		return nil, err
	}
	for _, b := range binaries {
		if _, err := stack.LookPath(b); err != nil {
			return nil, fmt.Errorf("%w (make binaries and make tools build it)", err)
		}
	}
	dir, err := os.MkdirTemp("", "loopwatch-demo-")
	if err != nil {
		return nil, err
	}
	c = &Cluster{opts: opts, cfg: cfg, dir: dir, bin: bin, start: time.Now()}
	defer func() {
		if err != nil {
			c.Close(true)
			c = nil
		}
	}()
	c.say("work directory (logs, rules, kubeconfigs, archives): %s", dir)
	if c.rules, err = c.writeRules(); err != nil {
		return c, err
	}
	if c.tls, err = newCerts(dir); err != nil {
		return c, err
	}
	if c.exporterAddr, err = stack.FreeAddr(); err != nil {
		return c, err
	}
	if err := c.startControlPlane(ctx); err != nil {
		return c, err
	}
	return c, nil
}

func (c *Cluster) writeRules() (string, error) {
	m, err := gen.Build(c.cfg)
	if err != nil {
		return "", err
	}
	files, err := m.Files()
	if err != nil {
		return "", err
	}
	c.shares = m.ShareRecordings()
	if err := gen.WriteFiles(c.dir, files); err != nil {
		return "", err
	}
	path := filepath.Join(c.dir, gen.RulesFile)
	// The config as a file, for `loopwatch diagnose --config`; JSON is YAML. Loading it back
	// checks that the file says what the rules were generated from.
	b, err := json.MarshalIndent(c.cfg, "", "  ")
	if err != nil {
		return "", err
	}
	c.configFile = filepath.Join(c.dir, "loopwatch.yaml")
	if err := os.WriteFile(c.configFile, b, 0o644); err != nil {
		return "", err
	}
	if back, err := gen.Load(c.configFile); err != nil || !reflect.DeepEqual(back, c.cfg) {
		return "", fmt.Errorf("the demo config does not load back from %s: %v", c.configFile, err)
	}
	c.say("generated %d alerts into %s (`for` %s, evaluated every %s)", len(m.Alerts()), path,
		time.Duration(c.cfg.Alerts[gen.QueueBacklog.Key].For), time.Duration(c.cfg.RuleInterval))
	return path, nil
}

// auditPolicy records writes and also list and watch requests at Metadata level (the
// exporter's deploy/audit-policy-reads.yaml), so relist storms show; lease renewals and events
// are left out.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
omitManagedFields: true
rules:
  - level: None
    resources: [{group: "coordination.k8s.io", resources: ["leases"]}]
  - level: None
    resources: [{group: "", resources: ["events"]}, {group: "events.k8s.io", resources: ["events"]}]
  - level: Metadata
    verbs: ["create", "update", "patch", "delete", "deletecollection", "list", "watch"]
  - level: None
`

func (c *Cluster) startControlPlane(ctx context.Context) error {
	crds, err := filepath.Abs(filepath.Join(c.bin, "..", "operator", "config", "crd", "bases"))
	if err != nil {
		return err
	}
	c.say("starting etcd and kube-apiserver (audit webhook -> exporter at https://%s/)", c.exporterAddr)
	cp, err := stack.StartControlPlane(ctx, stack.ControlPlaneOptions{
		CRDDirectories: []string{crds},
		AuditPolicy:    []byte(auditPolicy),
		AuditWebhook:   c.tls.webhook("https://" + c.exporterAddr + "/"),
		AuditLog:       true,
	})
	if err != nil {
		return err
	}
	c.cp = cp
	c.say("kube-apiserver ready at %s", cp.Host())
	scheme, err := app.NewScheme()
	if err != nil {
		return err
	}
	// The scenes' loads (a user creating 10 Backups a second) must not be throttled by
	// client-go's default 5 requests per second.
	admin := cp.AdminConfig()
	admin.QPS, admin.Burst = 100, 200
	c.kube, err = client.New(admin, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	return stack.WriteKubeconfig(c.AdminKubeconfig(), cp.AdminConfig())
}

// AdminKubeconfig is the path of a kubeconfig with the cluster admin's credentials.
func (c *Cluster) AdminKubeconfig() string { return filepath.Join(c.dir, "admin.kubeconfig") }

// Dir is the work directory.
func (c *Cluster) Dir() string { return c.dir }

// AuditLogPath is the API server's audit log file.
func (c *Cluster) AuditLogPath() string { return c.cp.AuditLogPath() }

// Close stops everything. When failed, the work directory is kept and the logs are printed.
func (c *Cluster) Close(failed bool) {
	if c.exporter != nil {
		c.exporter.Stop()
		c.exporter = nil
	}
	if c.cp != nil {
		_ = c.cp.Stop()
	}
	if failed {
		printf := func(f string, a ...any) { fmt.Fprintf(c.opts.Out, f+"\n", a...) }
		if c.cp != nil {
			stack.PrintLogs(printf, c.cp.Logs())
		}
		fmt.Fprintf(c.opts.Out, "logs kept in %s\n", c.dir)
		return
	}
	if c.opts.KeepDir {
		c.say("stopped everything; files kept in %s", c.dir)
		return
	}
	_ = os.RemoveAll(c.dir)
	c.say("stopped everything")
}

func (c *Cluster) say(format string, args ...any) {
	fmt.Fprintf(c.opts.Out, "[%6.1fs] %s\n", time.Since(c.start).Seconds(), fmt.Sprintf(format, args...))
}
