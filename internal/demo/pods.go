package demo

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/loopwatch/loopwatch/internal/proc"
	"github.com/loopwatch/loopwatch/internal/stack"
)

// pod is one replica of the operator: a backup-operator process with a token bound to a Pod
// object of that name (so audit events tell the replicas apart), its metrics address and
// scrape target fixed for the scene. With restart on, it is started again whenever it exits, as
// the kubelet does with restartPolicy Always.
type pod struct {
	s          *Scene
	name       string
	addr       string
	kubeconfig string
	log        string

	mu       sync.Mutex
	proc     *proc.Process
	args     []string
	env      []string
	restart  bool
	stopping bool
	restarts int
	done     chan struct{} // closed when the supervisor ends
}

func (s *Scene) newPod(ctx context.Context, name string) (*pod, error) {
	cfg, err := s.c.cp.PodConfig(ctx, s.Namespace, s.workload.ServiceAccount, name)
	if err != nil {
		return nil, err
	}
	kc := filepath.Join(s.dir, name+".kubeconfig")
	if err := stack.WriteKubeconfig(kc, cfg); err != nil {
		return nil, err
	}
	addr, err := stack.FreeAddr()
	if err != nil {
		return nil, err
	}
	return &pod{s: s, name: name, addr: addr, kubeconfig: kc, log: filepath.Join(s.dir, name+".log")}, nil
}

// Operator says how a scene runs the operator.
type Operator struct {
	// Pods is how many replicas run (default 1, at most ScenePods).
	Pods int
	// Flags are added to every replica's command line (fault modes, tuning).
	Flags []string
	// PodFlags are added to one replica's command line, by index.
	PodFlags map[int][]string
	// Env is added to every replica's environment (client-go feature gates).
	Env []string
	// Restart starts a replica again when it exits, as the kubelet does.
	Restart bool
}

// StartOperator starts the operator's replicas.
func (s *Scene) StartOperator(op Operator) error {
	n := max(op.Pods, 1)
	if n > len(s.pods) {
		return fmt.Errorf("scene %s: %d operator pods asked, %d available", s.Name, n, len(s.pods))
	}
	for i := range n {
		var flags []string
		for _, f := range append(append([]string{}, op.Flags...), op.PodFlags[i]...) {
			flags = append(flags, strings.ReplaceAll(f, "{ns}", s.Namespace))
		}
		if err := s.pods[i].start(s.operatorArgs(flags), op.Env, op.Restart); err != nil {
			return err
		}
		s.say("%s started %s", s.pods[i].name, strings.Join(flags, " "))
	}
	return nil
}

// operatorArgs is the command line of a replica confined to the scene's namespace.
func (s *Scene) operatorArgs(extra []string) []string {
	return append([]string{
		"--namespace=" + s.Namespace,
		"--leader-election-namespace=" + s.Namespace,
		"--metrics-insecure",
		"--health-probe-bind-address=0",
		"--store-dir=" + filepath.Join(s.dir, "store"),
		// Lease timings for a loaded 2-core machine: with controller-runtime's 10s renew
		// deadline a leader whose renewals are delayed by CPU contention loses its lease and
		// exits.
		"--leader-election-lease-duration=30s", "--leader-election-renew-deadline=20s", "--leader-election-retry-period=2s",
	}, extra...)
}

// start runs the replica; a running one is stopped first.
func (p *pod) start(args, env []string, restart bool) error {
	p.stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.args = append([]string{"--metrics-bind-address=" + p.addr}, args...)
	p.env = append([]string{"KUBECONFIG=" + p.kubeconfig}, env...)
	p.restart, p.stopping = restart, false
	if err := p.launch(); err != nil {
		return err
	}
	p.done = make(chan struct{})
	go p.supervise(p.proc, p.done)
	return nil
}

// launch starts the process; the caller holds mu.
func (p *pod) launch() error {
	pr, err := proc.Start(p.s.dir, p.name, filepath.Join(p.s.c.bin, "backup-operator"), p.env, p.args...)
	if err != nil {
		return err
	}
	p.proc = pr
	return nil
}

// supervise restarts the replica when it exits, if asked to and not stopping.
func (p *pod) supervise(pr *proc.Process, done chan struct{}) {
	defer close(done)
	for {
		err := pr.Wait()
		p.mu.Lock()
		if p.stopping || !p.restart {
			p.mu.Unlock()
			return
		}
		p.restarts++
		p.s.say("%s exited (%v); restarting it", p.name, err)
		p.mu.Unlock()
		time.Sleep(time.Second)
		p.mu.Lock()
		if p.stopping {
			p.mu.Unlock()
			return
		}
		if err := p.launch(); err != nil {
			p.s.say("%s: %v", p.name, err)
			p.mu.Unlock()
			return
		}
		pr = p.proc
		p.mu.Unlock()
	}
}

// running reports whether the replica's process runs now.
func (p *pod) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.proc == nil {
		return false
	}
	ended, _ := p.proc.Exited()
	return !ended
}

// stop stops the replica (SIGTERM, then SIGKILL) and its supervisor.
func (p *pod) stop() {
	p.mu.Lock()
	p.stopping = true
	pr, done := p.proc, p.done
	p.mu.Unlock()
	if pr != nil {
		pr.Stop()
	}
	if done != nil {
		<-done
	}
	p.mu.Lock()
	p.proc, p.done = nil, nil
	p.mu.Unlock()
}

// StartPod starts replica i with the scene's operator flags and extra ones.
func (s *Scene) StartPod(i int, extra ...string) error {
	if err := s.pods[i].start(s.operatorArgs(extra), nil, false); err != nil {
		return err
	}
	s.say("%s started %s", s.pods[i].name, strings.Join(extra, " "))
	return nil
}

// WaitPodUp waits until replica i serves its metrics: the process is up (a Deployment's new pod
// is ready before an old one goes).
func (s *Scene) WaitPodUp(ctx context.Context, i int) error {
	p := s.pods[i]
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if !p.running() {
			return false, fmt.Errorf("%s is not running (log %s)", p.name, p.log)
		}
		return stack.HTTPOK(ctx, http.DefaultClient, "http://"+p.addr+"/metrics") == nil, nil
	})
}

// StopPod stops replica i gracefully (SIGTERM: the operator finishes its reconciles and
// releases its lease).
func (s *Scene) StopPod(i int) {
	s.pods[i].stop()
	s.say("%s stopped", s.pods[i].name)
}

// PodName is the name of replica i.
func (s *Scene) PodName(i int) string { return s.pods[i].name }

// podName is the name every scene gives its replica i (its pod label).
func podName(i int) string { return fmt.Sprintf("backup-operator-%d", i) }

var leaderLine = regexp.MustCompile(`(?m)^leader_election_master_status\{[^}]*\} 1$`)

// Leader returns the replica that reports holding the lease now, read from the replicas'
// /metrics directly, or -1.
func (s *Scene) Leader(ctx context.Context) int {
	for i, p := range s.pods {
		if !p.running() {
			continue
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.addr+"/metrics", nil)
		if err != nil {
			continue
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			continue
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
		_ = resp.Body.Close()
		if err == nil && leaderLine.Match(body) {
			return i
		}
	}
	return -1
}
