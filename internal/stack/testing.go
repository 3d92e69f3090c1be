package stack

import (
	"bytes"
	"context"
	"errors"
	"os"
	"testing"
)

// logTailLines is how much of each component log a failed test prints.
const logTailLines = 40

// SkipShort skips t under -short: `make unit` runs no real component.
func SkipShort(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts real components (kube-apiserver, etcd, Prometheus or the project's binaries): not in -short")
	}
}

// NewTestControlPlane starts a control plane for t and stops it in t.Cleanup; it skips under
// -short. A missing binary fails the test with a hint to run `make tools`; any other start failure
// fails the test with the StartError. When the test failed the work directory is kept and the log
// files' paths and last lines are printed; otherwise the directory is removed.
func NewTestControlPlane(t testing.TB, opts ControlPlaneOptions) *ControlPlane {
	t.Helper()
	SkipShort(t)
	cp, err := StartControlPlane(context.Background(), opts)
	if err != nil {
		failStart(t, err)
	}
	t.Cleanup(func() {
		stopErr := cp.Stop()
		if stopErr != nil {
			t.Errorf("stop control plane: %v", stopErr)
		}
		finish(t, cp.dir, cp.Logs())
	})
	return cp
}

// NewTestPrometheus starts Prometheus for t and stops it in t.Cleanup, with NewTestControlPlane's
// handling of -short, missing binaries, failures and logs.
func NewTestPrometheus(t testing.TB, opts PrometheusOptions) *Prometheus {
	t.Helper()
	SkipShort(t)
	p, err := StartPrometheus(context.Background(), opts)
	if err != nil {
		failStart(t, err)
	}
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Errorf("stop prometheus: %v", err)
		}
		finish(t, p.dir, p.Logs())
	})
	return p
}

// failStart ends the test for a start error, printing the failed component's log.
func failStart(t testing.TB, err error) {
	t.Helper()
	var se *StartError
	if errors.As(err, &se) {
		t.Logf("%s log (%s), last lines:\n%s", se.Binary, se.LogFile, tail(se.LogFile, logTailLines))
	}
	t.Fatal(err)
}

// finish prints the logs of a failed test and keeps its directory, or removes the directory.
func finish(t testing.TB, dir string, logs map[string]string) {
	if !t.Failed() {
		if err := os.RemoveAll(dir); err != nil {
			t.Logf("remove %s: %v", dir, err)
		}
		return
	}
	for _, name := range sortedKeys(logs) {
		t.Logf("%s log kept at %s, last lines:\n%s", name, logs[name], tail(logs[name], logTailLines))
	}
}

// PrintLogs writes where each component's log is, with its last lines, through logf (such as
// t.Logf or log.Printf): for TestMain users who manage a ControlPlane themselves.
func PrintLogs(logf func(format string, args ...any), logs map[string]string) {
	for _, name := range sortedKeys(logs) {
		logf("%s log at %s, last lines:\n%s", name, logs[name], tail(logs[name], logTailLines))
	}
}

// tail returns the last n lines of the file at path, or why it cannot.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
