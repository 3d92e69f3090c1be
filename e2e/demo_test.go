package e2e_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/loopwatch/loopwatch/internal/proc"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// demoBinary is cmd/loopwatch-demo, built once for the demo tests; TestMain removes it.
var demoBinary = &proc.Binary{Package: "github.com/loopwatch/loopwatch/cmd/loopwatch-demo"}

func buildDemo(t *testing.T) string {
	t.Helper()
	path, err := demoBinary.Path()
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// demoRun is a running demo binary whose output is scanned line by line, and whose descendants
// (etcd, kube-apiserver, Prometheus, the exporter, the operator pods) are recorded while it runs.
type demoRun struct {
	t     *testing.T
	cmd   *exec.Cmd
	mu    sync.Mutex
	lines []string
	ended bool
	pos   int // lines before pos were looked at by waitFor
	seen  map[int]procID
	done  chan error
}

// procID tells a process apart from a later one that reuses its PID.
type procID struct {
	start string // field 22 of /proc/<pid>/stat: start time in clock ticks since boot
	cmd   string
}

func startDemo(t *testing.T, args ...string) *demoRun {
	t.Helper()
	cmd := exec.Command(buildDemo(t), args...)
	cmd.Env = append(os.Environ(), "LOOPWATCH_BIN="+binDir(t))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &demoRun{t: t, cmd: cmd, seen: map[int]procID{}, done: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			d.mu.Lock()
			d.lines = append(d.lines, sc.Text())
			d.mu.Unlock()
		}
		d.mu.Lock()
		d.ended = true
		d.mu.Unlock()
		d.done <- cmd.Wait()
	}()
	go func() {
		for {
			d.recordDescendants()
			select {
			case err := <-d.done:
				d.done <- err
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() {
		if d.cmd.ProcessState == nil {
			_ = d.cmd.Process.Kill()
		}
	})
	return d
}

func binDir(t *testing.T) string {
	abs, err := filepath.Abs("../bin")
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// waitFor returns the first output line matching re, failing after timeout.
func (d *demoRun) waitFor(re *regexp.Regexp, timeout time.Duration) []string {
	d.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		d.mu.Lock()
		for ; d.pos < len(d.lines); d.pos++ {
			if m := re.FindStringSubmatch(d.lines[d.pos]); m != nil {
				d.pos++
				d.mu.Unlock()
				return m
			}
		}
		ended := d.ended
		d.mu.Unlock()
		switch {
		case ended:
			d.t.Fatalf("the demo ended before printing %q:\n%s", re, d.output())
		case time.Now().After(deadline):
			d.t.Fatalf("the demo printed no %q within %s:\n%s", re, timeout, d.output())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (d *demoRun) output() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return strings.Join(d.lines, "\n")
}

// recordDescendants adds every process descending from the demo to seen.
func (d *demoRun) recordDescendants() {
	parents := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readStat(pid); ok {
			parents[pid] = st.ppid
		}
	}
	root := d.cmd.Process.Pid
	for pid := range parents {
		for p, hops := parents[pid], 0; p > 1 && hops < 64; p, hops = parents[p], hops+1 {
			if p == root {
				if st, ok := readStat(pid); ok {
					d.mu.Lock()
					if _, known := d.seen[pid]; !known {
						d.seen[pid] = procID{start: st.start, cmd: st.comm}
					}
					d.mu.Unlock()
				}
				break
			}
		}
	}
}

type stat struct {
	ppid  int
	start string
	comm  string
	state string
}

// readStat parses /proc/<pid>/stat (the command name may hold spaces and parentheses).
func readStat(pid int) (stat, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return stat{}, false
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return stat{}, false
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 20 {
		return stat{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	return stat{ppid: ppid, start: f[19], comm: s[open+1 : end], state: f[0]}, true
}

// interrupt sends SIGINT (Ctrl-C) and waits for the demo to end; then no process it started
// may be left.
func (d *demoRun) interrupt(timeout time.Duration) {
	d.t.Helper()
	if err := d.cmd.Process.Signal(syscall.SIGINT); err != nil {
		d.t.Fatal(err)
	}
	d.waitExit(timeout)
}

func (d *demoRun) waitExit(timeout time.Duration) error {
	d.t.Helper()
	var err error
	select {
	case err = <-d.done:
		d.done <- err
	case <-time.After(timeout):
		d.t.Fatalf("the demo did not end within %s:\n%s", timeout, d.output())
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var names []string
	for _, p := range d.seen {
		names = append(names, p.cmd)
	}
	d.t.Logf("the demo started %d processes: %s", len(d.seen), strings.Join(names, ", "))
	for _, want := range []string{"etcd", "kube-apiserver", "prometheus", "loopwatch", "backup-operator"} {
		if !strings.Contains(","+strings.Join(names, ",")+",", ","+want+",") {
			d.t.Errorf("never saw a %s process among the demo's children", want)
		}
	}
	for pid, p := range d.seen {
		if st, ok := readStat(pid); ok && st.start == p.start && st.state != "Z" {
			d.t.Errorf("process %d (%s) is still running after the demo ended", pid, p.cmd)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return err
}

// TestDemoInterruptedLeavesNoProcess runs `make demo`'s binary, interrupts it (Ctrl-C) while
// the incident runs, and checks that nothing it started is left running.
func TestDemoInterruptedLeavesNoProcess(t *testing.T) {
	if testing.Short() || os.Getenv("LOOPWATCH_E2E_MATRIX") == "" {
		t.Skip("set LOOPWATCH_E2E_MATRIX=1 (make e2e) to run the demo on real components")
	}
	d := startDemo(t, "-scenario=write-fight")
	d.waitFor(regexp.MustCompile(`waiting up to .* after the injection`), 5*time.Minute)
	time.Sleep(5 * time.Second) // the operator runs and the fight is on
	d.interrupt(2 * time.Minute)
}

// TestDemoKeepLeavesAUsableStack runs the demo with -keep (KEEP=1): once the incident has fired
// it must print how to reach the stack and how to stop it, and the stack must answer — Prometheus
// with the incident's alert, the exporter's metrics, the API server through the printed
// kubeconfig. Ctrl-C then stops everything.
func TestDemoKeepLeavesAUsableStack(t *testing.T) {
	if testing.Short() || os.Getenv("LOOPWATCH_E2E_MATRIX") == "" {
		t.Skip("set LOOPWATCH_E2E_MATRIX=1 (make e2e) to run the demo on real components")
	}
	d := startDemo(t, "-scenario=write-fight", "-keep")
	prom := d.waitFor(regexp.MustCompile(`^Prometheus:\s+(http://[0-9.:]+)\s`), 8*time.Minute)[1]
	exporter := d.waitFor(regexp.MustCompile(`^exporter metrics:\s+curl --cacert (\S+) --cert (\S+) --key (\S+) (https://\S+)`), time.Minute)
	kubeconfig := d.waitFor(regexp.MustCompile(`^kubeconfig:\s+export KUBECONFIG=(\S+)`), time.Minute)[1]
	d.waitFor(regexp.MustCompile(`^Stop it with Ctrl-C here, or: kill -INT \d+`), time.Minute)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	body := httpGet(t, ctx, prom+"/api/v1/alerts")
	if !strings.Contains(body, `"LoopwatchWriteFight"`) || !strings.Contains(body, `"firing"`) {
		t.Errorf("Prometheus at %s does not report the write fight firing: %s", prom, body)
	}
	if m := httpsGet(t, ctx, exporter[1], exporter[2], exporter[3], exporter[4]); !strings.Contains(m, "loopwatch_audit_batches_total") {
		t.Errorf("the exporter's metrics at %s lack loopwatch_audit_batches_total", exporter[4])
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("the printed kubeconfig does not reach the API server: %v", err)
	}
	d.interrupt(2 * time.Minute)
}

// httpsGet gets url trusting caFile and presenting the client certificate: the exporter's
// /metrics takes the webhook's credentials.
func httpsGet(t *testing.T, ctx context.Context, caFile, certFile, keyFile, url string) string {
	t.Helper()
	ca, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	return get(t, ctx, &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12,
	}}}, url)
}

func httpGet(t *testing.T, ctx context.Context, url string) string {
	t.Helper()
	return get(t, ctx, http.DefaultClient, url)
}

func get(t *testing.T, ctx context.Context, hc *http.Client, url string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestMain removes the binaries the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	demoBinary.Remove()
	legacyController.Remove()
	os.Exit(code)
}
