package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/loopwatch/loopwatch/gen"
	"github.com/loopwatch/loopwatch/internal/demo"
	"github.com/loopwatch/loopwatch/internal/proc"
	"github.com/loopwatch/loopwatch/internal/stack"
)

// One notification per incident, on a real Alertmanager (bin/alertmanager, v0.31.1) configured
// with the generated route and inhibit rules (alertmanager/), merged into a configuration whose
// receiver is a webhook served by the test. Each incident of the detection matrix sends its
// expected alerts as Prometheus posts them to /api/v2/alerts, with the labels the generated rules
// give them (their promtool cases' firing instances, gen.Model.FiringAlerts), each incident in a
// cluster of its own: Alertmanager must send exactly one notification per incident, and its firing
// alerts must include the incident's cause. Two incidents on two controllers at once give two
// notifications, and the hot objects of other workloads during a hot loop are still notified.

// notification is the part of Alertmanager's webhook payload the test reads.
type notification struct {
	GroupLabels map[string]string `json:"groupLabels"`
	Alerts      []struct {
		Status string            `json:"status"`
		Labels map[string]string `json:"labels"`
	} `json:"alerts"`
}

func (n notification) alertnames() []string {
	var out []string
	for _, a := range n.Alerts {
		if a.Status == "firing" {
			out = append(out, a.Labels["alertname"])
		}
	}
	sort.Strings(out)
	return out
}

// webhook collects Alertmanager's notifications.
type webhook struct {
	mu   sync.Mutex
	got  []notification
	errs []error
}

func (w *webhook) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	var n notification
	err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&n)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.errs = append(w.errs, err)
	} else {
		w.got = append(w.got, n)
	}
}

// byCluster returns the notifications received for one cluster label value.
func (w *webhook) byCluster(cluster string) []notification {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []notification
	for _, n := range w.got {
		if n.GroupLabels["cluster"] == cluster {
			out = append(out, n)
		}
	}
	return out
}

func (w *webhook) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.got)
}

// alertmanagerConfig merges the generated example and inhibit fragment into a configuration whose
// loopwatch receiver is url, with group timings short enough for a test (group_wait 2s) and long
// enough that no group notifies twice.
func alertmanagerConfig(t *testing.T, url string, inhibit bool) []byte {
	t.Helper()
	root := repoRoot(t)
	var cfg map[string]any
	readYAML(t, filepath.Join(root, gen.AlertmanagerExampleFile), &cfg)
	var fragment map[string]any
	readYAML(t, filepath.Join(root, gen.AlertmanagerInhibitFile), &fragment)
	cfg["inhibit_rules"] = fragment["inhibit_rules"]
	if !inhibit {
		delete(cfg, "inhibit_rules")
	}
	route := cfg["route"].(map[string]any)["routes"].([]any)[0].(map[string]any)
	route["group_wait"], route["group_interval"], route["repeat_interval"] = "2s", "1h", "24h"
	for _, r := range cfg["receivers"].([]any) {
		r := r.(map[string]any)
		if r["name"] == gen.AlertmanagerReceiver {
			r["webhook_configs"] = []any{map[string]any{"url": url, "send_resolved": false}}
		}
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// startAlertmanager runs bin/alertmanager with config on a free loopback port until the test ends,
// and returns its base URL.
func startAlertmanager(t *testing.T, config []byte) string {
	t.Helper()
	bin, err := stack.LookPath("alertmanager")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "alertmanager.yml")
	if err := os.WriteFile(cfgPath, config, 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	p, err := proc.Start(dir, "alertmanager", bin, nil,
		"--config.file="+cfgPath, "--storage.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--cluster.listen-address=", "--log.level=warn")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			if b, err := os.ReadFile(filepath.Join(dir, "alertmanager.log")); err == nil {
				t.Logf("alertmanager log:\n%s", b)
			}
		}
	})
	base := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		if exited, werr := p.Exited(); exited {
			t.Fatalf("alertmanager exited: %v (the configuration must load)", werr)
		}
		if time.Now().After(deadline) {
			t.Fatalf("alertmanager not ready after 30s: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// postAlerts sends firing alerts to Alertmanager as Prometheus does (POST /api/v2/alerts).
func postAlerts(t *testing.T, base string, alerts []map[string]string) {
	t.Helper()
	now := time.Now()
	type postable struct {
		Labels       map[string]string `json:"labels"`
		Annotations  map[string]string `json:"annotations"`
		StartsAt     time.Time         `json:"startsAt"`
		EndsAt       time.Time         `json:"endsAt"`
		GeneratorURL string            `json:"generatorURL"`
	}
	var body []postable
	for _, a := range alerts {
		body = append(body, postable{Labels: a, Annotations: map[string]string{"summary": a["alertname"]},
			StartsAt: now, EndsAt: now.Add(time.Hour), GeneratorURL: "http://prometheus.test/graph"})
	}
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(base+"/api/v2/alerts", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST /api/v2/alerts: %s: %s", resp.Status, msg)
	}
}

// incidentAlerts are the alerts an incident fires, each the first firing instance of its promtool
// cases, in cluster (one per incident, so that incidents neither group nor inhibit together).
func incidentAlerts(t *testing.T, m *gen.Model, inc demo.Incident, cluster string) []map[string]string {
	t.Helper()
	var out []map[string]string
	for _, a := range inc.Expect {
		fs, err := m.FiringAlerts(a)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, relabel(fs[0], "cluster", cluster))
	}
	return out
}

// relabel returns a copy of l with the label values given (name, value, ...; empty removes).
func relabel(l map[string]string, nameValues ...string) map[string]string {
	out := map[string]string{}
	for k, v := range l {
		out[k] = v
	}
	for i := 0; i+1 < len(nameValues); i += 2 {
		if nameValues[i+1] == "" {
			delete(out, nameValues[i])
		} else {
			out[nameValues[i]] = nameValues[i+1]
		}
	}
	return out
}

// otherWorkload moves alert labels to another controller's workload.
func otherWorkload(l map[string]string) map[string]string {
	out := relabel(l, "namespace", "tier-system", "job", "tier-controller-metrics")
	if _, ok := out["controller"]; ok {
		out["controller"] = "tier"
	}
	if _, ok := out["pod"]; ok {
		out["pod"] = "tier-controller-5b7f-qv8mn"
	}
	return out
}

func TestAlertmanagerSendsOneNotificationPerIncident(t *testing.T) {
	stack.SkipShort(t)
	m, err := gen.Build(gen.Default())
	if err != nil {
		t.Fatal(err)
	}
	hook := &webhook{}
	srv := &http.Server{Handler: hook, ReadHeaderTimeout: 5 * time.Second}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)                                          //nolint:errcheck // Serve returns when the test closes the server.
	t.Cleanup(func() { srv.Shutdown(context.Background()) }) //nolint:errcheck
	base := startAlertmanager(t, alertmanagerConfig(t, "http://"+l.Addr().String()+"/", true))

	type scene struct {
		name   string
		alerts []map[string]string
		// want are the notifications expected: for each, an alert its firing alerts must include.
		want []string
	}
	var scenes []scene
	for _, inc := range demo.Incidents() {
		if inc.Diagnosis == nil || inc.Diagnosis.Cause == nil {
			t.Fatalf("incident %s names no cause", inc.Name)
		}
		scenes = append(scenes, scene{name: inc.Name, alerts: incidentAlerts(t, m, inc, inc.Name), want: []string{inc.Diagnosis.Cause.FullName()}})
	}
	hotLoop, err := demo.Scenario("hot-loop")
	if err != nil {
		t.Fatal(err)
	}
	backlog, err := demo.Scenario("queue-backlog")
	if err != nil {
		t.Fatal(err)
	}
	// Two incidents at once, on two controllers of two workloads.
	two := incidentAlerts(t, m, hotLoop, "two-incidents")
	for _, a := range incidentAlerts(t, m, backlog, "two-incidents") {
		two = append(two, otherWorkload(a))
	}
	scenes = append(scenes, scene{name: "two-incidents", alerts: two, want: []string{gen.HotLoop.FullName(), gen.QueueBacklog.FullName()}})
	// During a hot loop, a hot object another workload writes, and one whose writer is no scraped
	// target (no job), each notified.
	hot, err := m.FiringAlerts(gen.HotObject)
	if err != nil {
		t.Fatal(err)
	}
	bystanders := append(incidentAlerts(t, m, hotLoop, "bystander"),
		otherWorkload(relabel(hot[0], "cluster", "bystander", "object_name", "elsewhere")),
		relabel(hot[0], "cluster", "bystander", "job", "", "object_name", "unscraped-writer"))
	scenes = append(scenes, scene{name: "bystander", alerts: bystanders,
		want: []string{gen.HotLoop.FullName(), gen.HotObject.FullName(), gen.HotObject.FullName()}})

	var all []map[string]string
	expected := 0
	for _, s := range scenes {
		all = append(all, s.alerts...)
		expected += len(s.want)
	}
	start := time.Now()
	postAlerts(t, base, all)
	// Every group notifies after group_wait (2s); wait until the expected count arrives, then as
	// long again for any notification an inhibit rule failed to hold back.
	deadline := time.Now().Add(60 * time.Second)
	for hook.count() < expected && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(max(5*time.Second, time.Since(start)))
	if len(hook.errs) > 0 {
		t.Fatalf("webhook payloads that do not decode: %v", hook.errs)
	}

	for _, s := range scenes {
		got := hook.byCluster(s.name)
		var names [][]string
		for _, n := range got {
			names = append(names, n.alertnames())
		}
		t.Logf("%s: %d alerts sent, %d notifications: %v", s.name, len(s.alerts), len(got), names)
		if len(got) != len(s.want) {
			t.Errorf("%s: %d notifications, want %d (%v): %v", s.name, len(got), len(s.want), s.want, names)
			continue
		}
		remaining := slices.Clone(names)
		for _, w := range s.want {
			i := slices.IndexFunc(remaining, func(ns []string) bool { return slices.Contains(ns, w) })
			if i < 0 {
				t.Errorf("%s: no notification names %s among its firing alerts: %v", s.name, w, names)
				continue
			}
			remaining = slices.Delete(remaining, i, i+1)
		}
	}
	if total := hook.count(); total != expected {
		t.Errorf("%d notifications in all, want %d", total, expected)
	}
	t.Logf("%d scenes, %d alerts, %d notifications in %s", len(scenes), len(all), hook.count(), time.Since(start).Round(time.Millisecond))

	// The control: without the inhibit rules, the same Alertmanager pages a hot loop twice (the
	// loop's controller, and its pod's PATCH rate with its hot object), so the count above is the
	// rules' doing.
	control := &webhook{}
	csrv := &http.Server{Handler: control, ReadHeaderTimeout: 5 * time.Second}
	cl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go csrv.Serve(cl)                                         //nolint:errcheck // Serve returns when the test closes the server.
	t.Cleanup(func() { csrv.Shutdown(context.Background()) }) //nolint:errcheck
	cbase := startAlertmanager(t, alertmanagerConfig(t, "http://"+cl.Addr().String()+"/", false))
	postAlerts(t, cbase, incidentAlerts(t, m, hotLoop, "hot-loop"))
	deadline = time.Now().Add(30 * time.Second)
	for control.count() < 2 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	if got := control.byCluster("hot-loop"); len(got) != 2 {
		t.Errorf("without inhibit rules a hot loop gave %d notifications, want 2: the test would not see a rule that fails", len(got))
	}
}
