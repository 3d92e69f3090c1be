// Package proc runs the programs of the demo and the tests as child processes, their output in
// a log file, that die with their parent whatever happens to it.
package proc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Process is a running child program.
type Process struct {
	// Name names the process in messages; Log is the file its output is appended to.
	Name, Log string
	cmd       *exec.Cmd
	done      chan error
}

// Start runs bin with args and env (added to this process's environment), its output appended
// to dir/name.log. The child gets a process group of its own, so that a terminal's Ctrl-C
// reaches the parent alone, which stops it in order.
func Start(dir, name, bin string, env []string, args ...string) (*Process, error) {
	logPath := filepath.Join(dir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s (%s): %w", name, bin, err)
	}
	p := &Process{Name: name, Log: logPath, cmd: cmd, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait(); f.Close() }()
	return p, nil
}

// Exited reports whether the process has ended, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case err := <-p.done:
		p.done <- err
		return true, err
	default:
		return false, nil
	}
}

// Wait blocks until the process ends and returns how.
func (p *Process) Wait() error {
	err := <-p.done
	p.done <- err
	return err
}

// Stop sends SIGTERM, then SIGKILL to the process group after 10 seconds.
func (p *Process) Stop() {
	if ended, _ := p.Exited(); ended {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		p.done <- <-p.done
	}
}
