package app

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/loopwatch/loopwatch/internal/proc"
)

// operator is cmd/backup-operator, built once per test process; TestMain removes it.
var operator = &proc.Binary{Package: "github.com/loopwatch/loopwatch/cmd/backup-operator"}

// operatorBinary returns the built operator's path.
func operatorBinary(t *testing.T) string {
	t.Helper()
	path, err := operator.Path()
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// testKubeconfigFile writes the test API server's kubeconfig for processes.
func testKubeconfigFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(p, testKubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// operatorProcess is the operator binary running as its own process, as in a
// pod: its own metrics registry, its own leader election identity.
type operatorProcess struct {
	name   string
	addr   string
	cmd    *exec.Cmd
	logs   *syncBuffer
	exited chan error
}

// startOperatorProcess runs the binary with plain-HTTP metrics on addr and args.
func startOperatorProcess(t *testing.T, name, addr string, args ...string) *operatorProcess {
	t.Helper()
	p := &operatorProcess{name: name, addr: addr, logs: &syncBuffer{}, exited: make(chan error, 1)}
	args = append([]string{"--metrics-insecure", "--metrics-bind-address=" + addr, "--health-probe-bind-address=0"}, args...)
	p.cmd = exec.Command(operatorBinary(t), args...)
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("%s logs:\n%s", p.name, p.logs.tail(40))
		}
	})
	return p
}

// terminate sends SIGTERM and waits for the exit, as the kubelet does on a
// rolling update.
func (p *operatorProcess) terminate(t *testing.T) error {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.exited:
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not stop within 30s of SIGTERM", p.name)
		return nil
	}
}

// metric returns the value of the sample whose line starts with prefix on
// the process's /metrics, or an error.
func (p *operatorProcess) metric(prefix string) (string, error) {
	resp, err := http.Get("http://" + p.addr + "/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 8<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, prefix) {
			f := strings.Fields(line)
			return f[len(f)-1], nil
		}
	}
	return "", fmt.Errorf("%s has no sample %s", p.name, prefix)
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *syncBuffer) tail(n int) string {
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
