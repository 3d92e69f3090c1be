package stack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// StartError reports a component that did not start: which binary, with which command line, and
// where its output went, so a failing test points straight at the evidence.
type StartError struct {
	// Binary is the executable's path.
	Binary string
	// Args are the arguments after the binary.
	Args []string
	// LogFile holds the component's stdout and stderr.
	LogFile string
	// Err is the cause: an exec failure, an early exit or a readiness timeout.
	Err error
}

// Error names the binary, the cause, the command line and the log file.
func (e *StartError) Error() string {
	return fmt.Sprintf("start %s: %v (command line: %s; log file: %s)",
		filepath.Base(e.Binary), e.Err, commandLine(e.Binary, e.Args), e.LogFile)
}

// Unwrap returns the cause.
func (e *StartError) Unwrap() error { return e.Err }

// commandLine renders argv so it can be pasted into a shell.
func commandLine(bin string, args []string) string {
	parts := make([]string, 0, len(args)+1)
	for _, a := range append([]string{bin}, args...) {
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\$`|&;<>(){}*?[]#~") {
			a = strconv.Quote(a)
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

// process is one running component, its output appended to a log file.
type process struct {
	name    string
	bin     string
	args    []string
	logPath string
	cmd     *exec.Cmd
	started time.Time // just before the process was started
	done    chan struct{}
	waitErr error
}

// startProcess runs bin with args, output to logPath, in this process' environment plus env. The
// child gets its own process group and SIGKILL when the test binary dies, so an aborted test
// leaves nothing behind.
func startProcess(name, bin string, args, env []string, logPath string) (*process, error) {
	p := &process{name: name, bin: bin, args: args, logPath: logPath, done: make(chan struct{})}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, p.startError(fmt.Errorf("open log file: %w", err))
	}
	p.cmd = exec.Command(bin, args...)
	if len(env) > 0 {
		p.cmd.Env = append(os.Environ(), env...)
	}
	p.cmd.Stdout = logFile
	p.cmd.Stderr = logFile
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, p.startError(err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// startError wraps err with the process' identity.
func (p *process) startError(err error) *StartError {
	return &StartError{Binary: p.bin, Args: p.args, LogFile: p.logPath, Err: err}
}

// waitReady polls ready until it succeeds, the process exits, or timeout passes. The last
// readiness error is kept so a timeout says what was still wrong.
func (p *process) waitReady(ctx context.Context, timeout time.Duration, ready func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		attempt, cancelAttempt := context.WithTimeout(ctx, 5*time.Second)
		last = ready(attempt)
		cancelAttempt()
		if last == nil {
			return nil
		}
		select {
		case <-p.done:
			return p.startError(fmt.Errorf("exited before it was ready: %w", p.exitError()))
		case <-ctx.Done():
			return p.startError(fmt.Errorf("not ready after %s: %w", timeout, last))
		case <-tick.C:
		}
	}
}

// exitError describes how the process ended.
func (p *process) exitError() error {
	if p.waitErr == nil {
		return errors.New("exit status 0")
	}
	return p.waitErr
}

// stop sends SIGTERM to the process group, then SIGKILL after grace, and waits for the exit. A
// process that already exited is not an error: a component dying mid-test shows in its log.
func (p *process) stop(grace time.Duration) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	pgid := p.cmd.Process.Pid
	if err := syscall.Kill(-pgid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop %s: %w", p.name, err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill %s: %w", p.name, err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("kill %s: pid %d still running 10s after SIGKILL", p.name, pgid)
	}
}
