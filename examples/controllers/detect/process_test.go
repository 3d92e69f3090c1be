package detect_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// process is a controller the test runs as a real program, its output in a log file.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan error
}

func startProcess(dir, name, bin string, env []string, args ...string) (*process, error) {
	logPath := filepath.Join(dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	// The child dies with the test, whatever happens to it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s (%s): %w", name, bin, err)
	}
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait(); f.Close() }()
	return p, nil
}

// exited reports whether the process has ended, and how.
func (p *process) exited() (bool, error) {
	select {
	case err := <-p.done:
		p.done <- err
		return true, err
	default:
		return false, nil
	}
}

// stop sends SIGTERM, then SIGKILL to the process group after a grace period.
func (p *process) stop() {
	if ended, _ := p.exited(); ended {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}
