package exporter

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/loopwatch/loopwatch/gen"
	"github.com/loopwatch/loopwatch/internal/stack"
)

// The exporter's replicas on real components: two kube-apiservers sharing one etcd (a control
// plane behind a load balancer), each sending its own audit batches, through a TCP proxy standing
// in for the exporter's Service, to real `loopwatch exporter` processes contending for a real
// Lease with the deploy files' Role.

// replicaCluster is the test bed.
type replicaCluster struct {
	t     *testing.T
	ctx   context.Context
	bin   string
	pki   *testPKI
	cp    *stack.ControlPlane
	as2   *stack.APIServer
	proxy *stack.Proxy
	// kubeconfig is the exporters' identity for the Lease: the deploy files' service account,
	// bound to their Role.
	kubeconfig string
	admin      kubernetes.Interface
	// args are added to every replica's command line.
	args []string
	dir  string
	// http reads the replicas' /metrics and /readyz over kept-alive connections: a client per
	// poll would pile up connections to the exporters' --max-connections.
	http *http.Client

	mu       sync.Mutex
	replicas map[string]*replicaProcess
	// all are every replica process started, for their logs.
	all []*replicaProcess
}

// replicaProcess is one `loopwatch exporter --leader-elect`.
type replicaProcess struct {
	name, addr string
	cmd        *exec.Cmd
	log        string
	done       chan struct{}
}

// leaseNamespace is the deploy files' namespace, where their Role lets the exporters hold the
// Lease.
const leaseNamespace = "loopwatch"

type clusterOptions struct {
	// apiServerArgs are added to both API servers' command lines (stack's are 1 s batches and a
	// 1 s retry back-off).
	apiServerArgs []string
	mode          stack.ProxyMode
	exporterArgs  []string
}

func startReplicaCluster(t *testing.T, opts clusterOptions) *replicaCluster {
	t.Helper()
	stack.SkipShort(t)
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "loopwatch-replicas-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("replica logs kept in %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	c := &replicaCluster{t: t, ctx: ctx, bin: buildLoopwatch(t), pki: newTestPKI(t), dir: dir, args: opts.exporterArgs, replicas: map[string]*replicaProcess{}}
	c.http = (&testServer{pki: c.pki}).client(nil)
	c.proxy, err = stack.StartProxy(stack.ProxyOptions{
		Mode: opts.mode, ReadinessURL: "https://%s/readyz", ReadinessClient: c.http,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.proxy.Close() })
	webhook := c.pki.auditWebhook(t, c.proxy.Addr())
	// Two API servers start slowly on a busy 2-core machine.
	const startTimeout = 5 * time.Minute
	c.cp = stack.NewTestControlPlane(t, stack.ControlPlaneOptions{AuditWebhook: webhook, AuditLog: true, ExtraAPIServerArgs: opts.apiServerArgs, StartTimeout: startTimeout})
	c.as2, err = c.cp.AddAPIServer(ctx, stack.APIServerOptions{AuditWebhook: webhook, AuditLog: true, ExtraAPIServerArgs: opts.apiServerArgs, StartTimeout: startTimeout})
	if err != nil {
		t.Fatal(err)
	}
	c.admin = kubernetes.NewForConfigOrDie(c.cp.AdminConfig())
	c.kubeconfig = c.leaseIdentity()
	t.Cleanup(c.stopAll)
	return c
}

// leaseIdentity creates the deploy files' ServiceAccount, Role and RoleBinding and writes a
// kubeconfig for the service account: the replicas hold the Lease with exactly the rights a
// cluster gives them.
func (c *replicaCluster) leaseIdentity() string {
	t := c.t
	cfg, err := c.cp.ServiceAccountConfig(c.ctx, leaseNamespace, "loopwatch-exporter")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join("deploy", "exporter.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range bytes.Split(b, []byte("\n---\n")) {
		var meta struct{ Kind string }
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatal(err)
		}
		switch meta.Kind {
		case "Role":
			var r rbacv1.Role
			if err := yaml.UnmarshalStrict(doc, &r); err != nil {
				t.Fatal(err)
			}
			_, err = c.admin.RbacV1().Roles(leaseNamespace).Create(c.ctx, &r, metav1.CreateOptions{})
		case "RoleBinding":
			var rb rbacv1.RoleBinding
			if err := yaml.UnmarshalStrict(doc, &rb); err != nil {
				t.Fatal(err)
			}
			_, err = c.admin.RbacV1().RoleBindings(leaseNamespace).Create(c.ctx, &rb, metav1.CreateOptions{})
		default:
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["cp"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["exporter"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["lease"] = &clientcmdapi.Context{Cluster: "cp", AuthInfo: "exporter"}
	kc.CurrentContext = "lease"
	path := filepath.Join(c.dir, "lease.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// start runs a replica at addr ("" for a free address) and adds it to the proxy's backends.
func (c *replicaCluster) start(name, addr string, extra ...string) *replicaProcess {
	t := c.t
	t.Helper()
	if addr == "" {
		var err error
		if addr, err = stack.FreeAddr(); err != nil {
			t.Fatal(err)
		}
	}
	r := &replicaProcess{name: name, addr: addr, log: filepath.Join(c.dir, name+".log"), done: make(chan struct{})}
	args := append([]string{"exporter", "--listen-address=" + addr, "--tls-cert-file=" + c.pki.certFile,
		"--tls-key-file=" + c.pki.keyFile, "--client-ca-file=" + c.pki.caFile, "--metrics-open",
		"--leader-elect", "--kubeconfig=" + c.kubeconfig, "--lease-namespace=" + leaseNamespace,
		"--replica-name=" + name, "--replica-address=" + addr, "--debug"}, c.args...)
	args = append(args, extra...)
	logFile, err := os.OpenFile(r.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	r.cmd = exec.Command(c.bin, args...)
	r.cmd.Stdout, r.cmd.Stderr = logFile, logFile
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = r.cmd.Wait()
		_ = logFile.Close()
		close(r.done)
	}()
	c.mu.Lock()
	c.replicas[name] = r
	c.all = append(c.all, r)
	c.mu.Unlock()
	c.setBackends()
	return r
}

// setBackends gives the proxy the running replicas, as a Service's endpoints follow its pods.
func (c *replicaCluster) setBackends() {
	c.mu.Lock()
	var addrs []string
	for _, r := range c.replicas {
		addrs = append(addrs, r.addr)
	}
	c.mu.Unlock()
	sort.Strings(addrs)
	c.proxy.SetBackends(addrs)
}

// kill sends SIGKILL to a replica, as kill -9 (or an OOM kill) does.
func (c *replicaCluster) kill(r *replicaProcess) {
	_ = r.cmd.Process.Kill()
	<-r.done
}

// stop sends SIGTERM, as the kubelet does first, and waits for the exit; the replica leaves the
// proxy's backends at once, as a terminating pod leaves its Service's endpoints.
func (c *replicaCluster) stop(r *replicaProcess) {
	c.mu.Lock()
	delete(c.replicas, r.name)
	c.mu.Unlock()
	c.setBackends()
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		c.t.Errorf("replica %s did not stop within 30s", r.name)
		c.kill(r)
	}
}

func (c *replicaCluster) stopAll() {
	c.mu.Lock()
	var rs []*replicaProcess
	for _, r := range c.replicas {
		rs = append(rs, r)
	}
	c.mu.Unlock()
	if c.t.Failed() {
		// Their goroutines, in their logs.
		for _, r := range rs {
			_ = r.cmd.Process.Signal(syscall.SIGQUIT)
			select {
			case <-r.done:
			case <-time.After(5 * time.Second):
			}
		}
	}
	for _, r := range rs {
		c.stop(r)
	}
	if c.t.Failed() {
		if l, err := c.admin.CoordinationV1().Leases(leaseNamespace).Get(c.ctx, "loopwatch-exporter", metav1.GetOptions{}); err == nil {
			c.t.Logf("lease: holder %v, renewed %v, transitions %v", ptrString(l.Spec.HolderIdentity), l.Spec.RenewTime, l.Spec.LeaseTransitions)
		}
		seen := map[string]bool{}
		for _, r := range c.all {
			if !seen[r.log] {
				seen[r.log] = true
				c.t.Logf("replica %s log %s (last lines):\n%s", r.name, r.log, tailFile(r.log, 40))
			}
		}
	}
}

func ptrString(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

// poll checks cond every 250 ms until it holds or d passes.
func poll(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, d)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func tailFile(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// metrics scrapes a replica; "" when it does not answer.
func (c *replicaCluster) metrics(r *replicaProcess) string {
	resp, err := c.http.Get("https://" + r.addr + "/metrics")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return ""
	}
	return string(b)
}

// ready reports whether a replica answers /readyz with 200.
func (c *replicaCluster) ready(r *replicaProcess) bool {
	return stack.HTTPOK(c.ctx, c.http, "https://"+r.addr+"/readyz") == nil
}

// waitReady waits until every replica is ready: one leads, the others follow it in step.
func (c *replicaCluster) waitReady(rs ...*replicaProcess) {
	c.t.Helper()
	for _, r := range rs {
		poll(c.t, 90*time.Second, "replica "+r.name+" ready", func() bool { return c.ready(r) })
	}
}

// leader returns the replica that leads (loopwatch_audit_replica_leader 1), nil when none does.
func (c *replicaCluster) leader() *replicaProcess {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.replicas {
		if sample(c.metrics(r), "loopwatch_audit_replica_leader ") == 1 {
			return r
		}
	}
	return nil
}

// onFirst returns a client of identity cfg on the first API server, onSecond on the second.
func (c *replicaCluster) onFirst(cfg *rest.Config, err error) kubernetes.Interface {
	c.t.Helper()
	return c.clientOn(cfg, err, false)
}

func (c *replicaCluster) onSecond(cfg *rest.Config, err error) kubernetes.Interface {
	c.t.Helper()
	return c.clientOn(cfg, err, true)
}

func (c *replicaCluster) clientOn(cfg *rest.Config, err error, second bool) kubernetes.Interface {
	c.t.Helper()
	if err != nil {
		c.t.Fatal(err)
	}
	if second {
		cfg = c.as2.Config(cfg)
	}
	cfg.QPS, cfg.Burst = 1000, 1000
	return kubernetes.NewForConfigOrDie(cfg)
}

func (c *replicaCluster) grantConfigMaps(namespace string, sas ...string) {
	for _, sa := range sas {
		if err := c.cp.Grant(c.ctx, stack.ServiceAccountSubject(namespace, sa), rbacv1.PolicyRule{
			APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "create", "update", "patch"},
		}); err != nil {
			c.t.Fatal(err)
		}
	}
}

func (c *replicaCluster) createConfigMap(namespace, name string) {
	_, err := c.admin.CoreV1().ConfigMaps(namespace).Create(c.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		c.t.Fatal(err)
	}
}

// TestReplicasSeeAFightAndARaceAcrossTwoAPIServersWhole: a fight between an actor on each API
// server, and a replica race between a pod on each, reach 1, 2 and 3 exporter replicas behind a
// proxy that spreads connections over every replica or one that follows readiness; in every
// set-up every replica reports the fight with all its handoffs and both actors, and the race
// with both pods, and the replicas' handoff counters add up to the handoffs.
func TestReplicasSeeAFightAndARaceAcrossTwoAPIServersWhole(t *testing.T) {
	const handoffs = 24
	start := time.Now()
	for _, mode := range []struct {
		name string
		mode stack.ProxyMode
	}{{"spreading connections", stack.SpreadConnections}, {"following readiness", stack.FollowReadiness}} {
		t.Run(mode.name, func(t *testing.T) {
			c := startReplicaCluster(t, clusterOptions{mode: mode.mode, exporterArgs: []string{
				// The test API servers send a batch a second and retry after 1 s.
				"--reorder-wait=3s", "--lease-duration=4s", "--lease-renew-deadline=3s", "--lease-retry-period=1s",
			}})
			const ns = "fighting"
			a := c.onFirst(c.cp.ServiceAccountConfig(c.ctx, ns, "fighter-a"))
			b := c.onSecond(c.cp.ServiceAccountConfig(c.ctx, ns, "fighter-b"))
			r0 := c.onFirst(c.cp.PodConfig(c.ctx, ns, "racer", "racer-0"))
			r1 := c.onSecond(c.cp.PodConfig(c.ctx, ns, "racer", "racer-1"))
			c.grantConfigMaps(ns, "fighter-a", "fighter-b", "racer")
			for n := 1; n <= 3; n++ {
				setup := fmt.Sprintf("%d-replicas", n)
				t.Run(setup, func(t *testing.T) {
					c.t = t
					stepStart := time.Now()
					var rs []*replicaProcess
					for i := range n {
						rs = append(rs, c.start(fmt.Sprintf("%s-%d", setup, i), ""))
					}
					c.waitReady(rs...)
					fought, raced := "contested-"+setup, "raced-"+setup
					c.createConfigMap(ns, fought)
					c.createConfigMap(ns, raced)
					clients := []kubernetes.Interface{a, b}
					for i := range handoffs + 1 {
						patch := fmt.Sprintf(`{"data":{"owner":"fighter-%d"}}`, i%2)
						if _, err := clients[i%2].CoreV1().ConfigMaps(ns).Patch(c.ctx, fought, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
							t.Fatal(err)
						}
					}
					for i, r := range []kubernetes.Interface{r0, r1, r0, r1} {
						patch := fmt.Sprintf(`{"data":{"round":"%d"}}`, i)
						if _, err := r.CoreV1().ConfigMaps(ns).Patch(c.ctx, raced, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
							t.Fatal(err)
						}
					}
					fightLine := func(m string) float64 {
						return sampleWith(m, "loopwatch_audit_fight_handoffs", map[string]string{
							"actor_a": "system:serviceaccount:" + ns + ":fighter-a", "actor_b": "system:serviceaccount:" + ns + ":fighter-b",
							"field_manager_a": "exporter.test", "field_manager_b": "exporter.test", "group": "", "mutating_webhook": "",
							"object_name": fought, "object_namespace": ns, "resource": "configmaps", "subresource": "",
						})
					}
					raceLine := func(m string) float64 {
						return sampleWith(m, "loopwatch_audit_replica_race_pods", map[string]string{
							"actor": "system:serviceaccount:" + ns + ":racer", "group": "", "object_name": raced,
							"object_namespace": ns, "resource": "configmaps", "subresource": "",
						})
					}
					var got map[string][2]float64
					var counted float64
					ok := func() bool {
						got, counted = map[string][2]float64{}, 0
						all := true
						for _, r := range rs {
							m := c.metrics(r)
							got[r.name] = [2]float64{fightLine(m), raceLine(m)}
							all = all && got[r.name] == [2]float64{handoffs, 2}
							counted += handoffCount(m, ns)
						}
						return all && counted == handoffs
					}
					deadline := time.Now().Add(60 * time.Second)
					for !ok() {
						if time.Now().After(deadline) {
							t.Fatalf("after 60s: fight handoffs and race pods by replica %v, handoffs counted over the replicas %v; want %d handoffs and 2 pods on every replica, %d counted", got, counted, handoffs, handoffs)
						}
						time.Sleep(500 * time.Millisecond)
					}
					leader := c.leader()
					t.Logf("%s, proxy %s: every replica reports the fight's %d handoffs and the race's 2 pods; leader %v; %s",
						setup, mode.name, handoffs, leader != nil, time.Since(stepStart).Round(time.Second))
					for _, r := range rs {
						c.stop(r)
					}
				})
			}
			c.t = t
		})
	}
	t.Logf("all set-ups: %s", time.Since(start).Round(time.Second))
}

// handoffCount sums a replica's loopwatch_audit_handoffs_total between the two fighters.
// sampleWith returns the value of the first series of the family name that has every label of
// want (other labels, such as the actors' workloads, may be there too), or -1.
func sampleWith(metrics, name string, want map[string]string) float64 {
	for _, line := range strings.Split(metrics, "\n") {
		if !strings.HasPrefix(line, name+"{") {
			continue
		}
		i := strings.LastIndexByte(line, '}')
		if i < 0 {
			continue
		}
		set := "," + line[len(name)+1:i] + ","
		match := true
		for k, v := range want {
			if !strings.Contains(set, ","+k+"="+strconv.Quote(v)+",") {
				match = false
				break
			}
		}
		if match {
			v, err := strconv.ParseFloat(strings.TrimSpace(line[i+1:]), 64)
			if err == nil {
				return v
			}
		}
	}
	return -1
}

func handoffCount(metrics, ns string) float64 {
	total := 0.0
	for _, line := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(line, "loopwatch_audit_handoffs_total{") && strings.Contains(line, ns+":fighter-a") && strings.Contains(line, ns+":fighter-b") {
			var v float64
			if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err == nil {
				total += v
			}
		}
	}
	return total
}

// takeovers reads the replicas' logs for their takeovers: how many increments each new leader
// adopted from the one before (increments of every shared counter, events and batches included).
func (c *replicaCluster) takeovers() []string {
	var out []string
	for _, r := range c.all {
		b, err := os.ReadFile(r.log)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			var l struct {
				Msg, Unscraped string
				Increments     float64
			}
			if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "Leading" && l.Unscraped == "adopted" {
				out = append(out, fmt.Sprintf("%s adopted %v increments", r.name, l.Increments))
			}
		}
	}
	return out
}

// ---- failover ----

// loadNamespace holds the writers of the failover tests.
const loadNamespace = "load"

// loadWriters writes ConfigMaps at rate writes per second, spread over four actors, two on each
// API server, until stop is closed.
func (c *replicaCluster) loadWriters(rate int, stop <-chan struct{}) (done <-chan struct{}) {
	t := c.t
	var clients []kubernetes.Interface
	var names []string
	for i := range 4 {
		name := fmt.Sprintf("writer-%d", i)
		names = append(names, name)
		cfg, err := c.cp.ServiceAccountConfig(c.ctx, loadNamespace, name)
		clients = append(clients, c.clientOn(cfg, err, i%2 == 1))
	}
	c.grantConfigMaps(loadNamespace, names...)
	for i := range 16 {
		c.createConfigMap(loadNamespace, fmt.Sprint("load-", i))
	}
	d := make(chan struct{})
	go func() {
		defer close(d)
		tick := time.NewTicker(time.Second / time.Duration(rate))
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			patch := fmt.Sprintf(`{"data":{"n":"%d"}}`, i)
			if _, err := clients[i%4].CoreV1().ConfigMaps(loadNamespace).Patch(c.ctx, fmt.Sprint("load-", i%16), types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				t.Errorf("write %d: %v", i, err)
				return
			}
		}
	}()
	return d
}

// logWrites counts, from both API servers' log backends (the ground truth), the completed
// writes of each load writer.
func (c *replicaCluster) logWrites() map[string]float64 {
	out := map[string]float64{}
	for _, path := range []string{c.cp.AuditLogPath(), c.as2.AuditLogPath()} {
		f, err := os.Open(path)
		if err != nil {
			c.t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 4<<20)
		for sc.Scan() {
			var ev struct {
				Stage string
				Verb  string
				User  struct{ Username string }
			}
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				c.t.Fatal(err)
			}
			if ev.Stage == "ResponseComplete" && ev.Verb == "patch" && strings.HasPrefix(ev.User.Username, "system:serviceaccount:"+loadNamespace+":") {
				out[ev.User.Username]++
			}
		}
		f.Close()
	}
	return out
}

// seenWrites sums, per load writer, loopwatch_audit_writes_total over every replica's lives as
// Prometheus saw them: each series (a replica's) is cut into lives where it resets, and each
// life's last sample counts (a life starts at 0).
func seenWrites(ctx context.Context, t *testing.T, p *stack.Prometheus) map[string]float64 {
	t.Helper()
	v, _, err := p.API().Query(ctx, `loopwatch_audit_writes_total{actor=~"system:serviceaccount:`+loadNamespace+`:.*",verb="patch"}[1h]`, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, s := range v.(model.Matrix) {
		last := 0.0
		for i, sp := range s.Values {
			if i > 0 && float64(sp.Value) < last {
				out[string(s.Metric["actor"])] += last
			}
			last = float64(sp.Value)
		}
		out[string(s.Metric["actor"])] += last
	}
	return out
}

// apiserverErrors sums apiserver_audit_error_total{plugin="webhook"} over both API servers now.
func apiserverErrors(ctx context.Context, t *testing.T, p *stack.Prometheus) float64 {
	t.Helper()
	v, err := p.Query(ctx, `sum(apiserver_audit_error_total{plugin="webhook"})`)
	if err != nil {
		t.Fatal(err)
	}
	if len(v) == 0 {
		return 0
	}
	return float64(v[0].Value)
}

// compare reports, per writer, lost (in the log, not seen) and doubled (seen more than logged).
func compare(truth, seen map[string]float64) (lost, doubled float64) {
	for actor, n := range truth {
		if d := n - seen[actor]; d > 0 {
			lost += d
		} else {
			doubled -= d
		}
	}
	for actor, n := range seen {
		if _, ok := truth[actor]; !ok {
			doubled += n
		}
	}
	return lost, doubled
}

// failoverCluster is a cluster with the deploy files' API server timings (5 s batches, retries
// after 10 s), the exporters' defaults (20 s reorder wait, 10 s lease), a proxy that follows
// readiness as a Service does, and Prometheus scraping every replica address and both API
// servers every 5 s.
func failoverCluster(t *testing.T, addrs []string, ruleFiles ...string) (*replicaCluster, *stack.Prometheus) {
	t.Helper()
	c := startReplicaCluster(t, clusterOptions{
		mode:          stack.FollowReadiness,
		apiServerArgs: []string{"--audit-webhook-batch-max-wait=5s", "--audit-webhook-initial-backoff=10s"},
	})
	as1, err := c.cp.ScrapeTarget("apiserver")
	if err != nil {
		t.Fatal(err)
	}
	as2, err := c.as2.ScrapeTarget(c.cp, "apiserver")
	if err != nil {
		t.Fatal(err)
	}
	as1.Addresses = append(as1.Addresses, as2.Addresses...)
	p := stack.NewTestPrometheus(t, stack.PrometheusOptions{
		ScrapeInterval: 5 * time.Second, RuleFiles: ruleFiles,
		Targets: []stack.ScrapeTarget{as1, {
			Job: "loopwatch-exporter", Addresses: addrs, Scheme: "https", TLS: &stack.TLSFiles{CAFile: c.pki.caFile},
		}},
	})
	return c, p
}

// settle waits until what Prometheus saw of the exporters stops changing (the API servers'
// retries done: up to 97 s) and returns the truth and what was seen.
func settle(ctx context.Context, t *testing.T, c *replicaCluster, p *stack.Prometheus) (truth, seen map[string]float64) {
	t.Helper()
	deadline := time.Now().Add(150 * time.Second)
	for {
		truth, seen = c.logWrites(), seenWrites(ctx, t, p)
		if lost, doubled := compare(truth, seen); lost == 0 && doubled == 0 || time.Now().After(deadline) {
			return truth, seen
		}
		time.Sleep(5 * time.Second)
	}
}

func freeAddrs(t *testing.T, n int) []string {
	var out []string
	for range n {
		a, err := stack.FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, a)
	}
	return out
}

func total(m map[string]float64) float64 {
	s := 0.0
	for _, v := range m {
		s += v
	}
	return s
}

// TestReplicasLoseNothingWhenTheLeaderIsKilled: under 20 writes/s over both API servers, kill -9
// the replica that receives; the other takes over (and the killed one's container comes back, as
// the kubelet restarts it, as a standby). Against both API servers' log backends, the writes
// Prometheus saw over every replica's lives: none lost, none counted twice.
func TestReplicasLoseNothingWhenTheLeaderIsKilled(t *testing.T) {
	addrs := freeAddrs(t, 2)
	c, p := failoverCluster(t, addrs)
	ctx := c.ctx
	r := []*replicaProcess{c.start("exporter-a", addrs[0]), c.start("exporter-b", addrs[1])}
	c.waitReady(r...)
	stop := make(chan struct{})
	done := c.loadWriters(20, stop)
	time.Sleep(25 * time.Second)
	leader := c.leader()
	if leader == nil {
		t.Fatal("no replica leads")
	}
	killed := time.Now()
	c.kill(leader)
	t.Logf("Killed the leader %s (kill -9)", leader.name)
	time.Sleep(5 * time.Second)
	c.start(leader.name, leader.addr) // the kubelet restarts the container
	var took time.Duration
	poll(t, 60*time.Second, "a new leader", func() bool {
		l := c.leader()
		took = time.Since(killed)
		return l != nil && l.name != leader.name
	})
	t.Logf("A new leader within %s of the kill (lease %s)", took.Round(time.Second), DefaultLeaseDuration)
	time.Sleep(30 * time.Second)
	close(stop)
	<-done
	truth, seen := settle(ctx, t, c, p)
	lost, doubled := compare(truth, seen)
	errs := apiserverErrors(ctx, t, p)
	t.Logf("writes in the API servers' logs %v, seen by Prometheus over the replicas' lives %v: lost %v, counted twice %v; apiserver_audit_error_total %v; takeovers: %v",
		total(truth), total(seen), lost, doubled, errs, c.takeovers())
	if lost != 0 || doubled != 0 {
		t.Fatalf("per writer: logged %v, seen %v", truth, seen)
	}
}

// TestReplicasLoseNothingInARollingRestart: under 20 writes/s, every replica is replaced one at a
// time as a Deployment's rollout does (a new one started and ready before an old one is stopped
// with SIGTERM), the leader among them: none lost, none counted twice.
func TestReplicasLoseNothingInARollingRestart(t *testing.T) {
	addrs := freeAddrs(t, 4)
	c, p := failoverCluster(t, addrs)
	ctx := c.ctx
	old := []*replicaProcess{c.start("exporter-1", addrs[0]), c.start("exporter-2", addrs[1])}
	c.waitReady(old...)
	stop := make(chan struct{})
	done := c.loadWriters(20, stop)
	time.Sleep(20 * time.Second)
	rollout := time.Now()
	for i, o := range old {
		n := c.start(fmt.Sprintf("exporter-%d", i+3), addrs[i+2])
		c.waitReady(n)
		c.stop(o)
		t.Logf("Replaced %s with %s", o.name, n.name)
	}
	t.Logf("Rollout done in %s", time.Since(rollout).Round(time.Second))
	time.Sleep(30 * time.Second)
	close(stop)
	<-done
	truth, seen := settle(ctx, t, c, p)
	lost, doubled := compare(truth, seen)
	errs := apiserverErrors(ctx, t, p)
	t.Logf("writes in the API servers' logs %v, seen by Prometheus over the replicas' lives %v: lost %v, counted twice %v; apiserver_audit_error_total %v; takeovers: %v",
		total(truth), total(seen), lost, doubled, errs, c.takeovers())
	if lost != 0 || doubled != 0 {
		t.Fatalf("per writer: logged %v, seen %v", truth, seen)
	}
}

// OutageTestEnv runs TestAnExporterOutageFiresTheAlertAndCountsWhatWasLost (about 9 minutes: an
// outage past the API server's retries, then the alert's 5 minutes).
const OutageTestEnv = "LOOPWATCH_OUTAGE_TEST"

// TestAnExporterOutageFiresTheAlertAndCountsWhatWasLost: every replica down for longer than the
// API server's retries (the deploy files' timings: 5 s batches, tries spanning 81-97 s) under 20
// writes/s. LoopwatchAuditWebhookErrors, as generated (for: 5m), fires within its for: of the
// first batch dropped, and the events the exporters never saw (against both API servers' log
// backends) are exactly the ones apiserver_audit_error_total counts.
func TestAnExporterOutageFiresTheAlertAndCountsWhatWasLost(t *testing.T) {
	if os.Getenv(OutageTestEnv) == "" {
		t.Skipf("about 9 minutes: set %s=1", OutageTestEnv)
	}
	addrs := freeAddrs(t, 2)
	cfg := gen.Default()
	cfg.RuleInterval = gen.Duration(15 * time.Second)
	m, err := gen.Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	files, err := m.Files()
	if err != nil {
		t.Fatal(err)
	}
	rulesDir := t.TempDir()
	if err := gen.WriteFiles(rulesDir, files); err != nil {
		t.Fatal(err)
	}
	c, p := failoverCluster(t, addrs, filepath.Join(rulesDir, gen.RulesFile))
	ctx := c.ctx
	r := []*replicaProcess{c.start("exporter-a", addrs[0]), c.start("exporter-b", addrs[1])}
	c.waitReady(r...)
	// Every event so far delivered or given up on: the books open here.
	stop := make(chan struct{})
	done := c.loadWriters(20, stop)
	time.Sleep(10 * time.Second)
	close(stop)
	<-done
	truth0, seen0 := settle(ctx, t, c, p)
	errs0 := apiserverErrors(ctx, t, p)

	stop = make(chan struct{})
	done = c.loadWriters(20, stop)
	time.Sleep(10 * time.Second)
	outage := time.Now()
	for _, x := range r {
		c.stop(x)
	}
	t.Logf("Every replica stopped")
	time.Sleep(130 * time.Second)
	r = []*replicaProcess{c.start("exporter-a", addrs[0]), c.start("exporter-b", addrs[1])}
	c.waitReady(r...)
	t.Logf("Replicas back after %s", time.Since(outage).Round(time.Second))
	time.Sleep(20 * time.Second)
	close(stop)
	<-done

	// The drops: the first one, and the alert within its for: of it.
	var firstDrop time.Time
	poll(t, 3*time.Minute, "apiserver_audit_error_total to count a dropped batch", func() bool {
		if apiserverErrors(ctx, t, p) > errs0 {
			firstDrop = time.Now()
			return true
		}
		return false
	})
	actx, cancel := context.WithTimeout(ctx, 8*time.Minute)
	defer cancel()
	if _, err := p.WaitForAlert(actx, "LoopwatchAuditWebhookErrors", nil); err != nil {
		t.Fatal(err)
	}
	fired := time.Since(firstDrop)
	forDuration := 5 * time.Minute
	t.Logf("LoopwatchAuditWebhookErrors fired %s after the first drop was scraped (for: %s, rules evaluated every 15s, scraped every 5s)", fired.Round(time.Second), forDuration)
	if fired > forDuration+time.Minute {
		t.Errorf("the alert fired %s after the first drop, want within its for: (%s) and an evaluation", fired, forDuration)
	}

	truth, seen := settleSeen(ctx, t, c, p)
	errs := apiserverErrors(ctx, t, p)
	lostEvents := (total(truth) - total(truth0)) - (total(seen) - total(seen0))
	t.Logf("during the outage: writes logged %v, seen %v: %v never seen; apiserver_audit_error_total rose by %v",
		total(truth)-total(truth0), total(seen)-total(seen0), lostEvents, errs-errs0)
	if lostEvents <= 0 {
		t.Fatalf("nothing lost: the outage (%s) did not outlast the API server's retries", 130*time.Second)
	}
	if lostEvents != errs-errs0 {
		t.Fatalf("%v writes never seen, apiserver_audit_error_total rose by %v", lostEvents, errs-errs0)
	}
}

// settleSeen waits until what Prometheus saw of the exporters stops changing for 30 s (the
// retries of every batch over) and returns the truth and what was seen.
func settleSeen(ctx context.Context, t *testing.T, c *replicaCluster, p *stack.Prometheus) (truth, seen map[string]float64) {
	t.Helper()
	last, since := -1.0, time.Now()
	for {
		truth, seen = c.logWrites(), seenWrites(ctx, t, p)
		if n := total(seen); n != last {
			last, since = n, time.Now()
		}
		if time.Since(since) > 30*time.Second {
			return truth, seen
		}
		time.Sleep(5 * time.Second)
	}
}
