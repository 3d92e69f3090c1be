package stack_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loopwatch/loopwatch/internal/stack"
)

func TestStartFailureNamesBinaryCommandLineAndLogFile(t *testing.T) {
	tests := []struct {
		name       string
		start      func(context.Context) error
		wantBinary string
		wantArg    string
		wantInLog  string
	}{
		{
			name: "kube-apiserver rejecting an unknown flag",
			start: func(ctx context.Context) error {
				_, err := stack.StartControlPlane(ctx, stack.ControlPlaneOptions{ExtraAPIServerArgs: []string{"--no-such-flag=1"}})
				return err
			},
			wantBinary: "kube-apiserver",
			wantArg:    "--no-such-flag=1",
			wantInLog:  "unknown flag: --no-such-flag",
		},
		{
			name: "prometheus given a rule file that does not parse",
			start: func(ctx context.Context) error {
				_, err := stack.StartPrometheus(ctx, stack.PrometheusOptions{RuleFiles: []string{writeFile(t, "broken.yaml", "groups: [{name: x, rules: [{record: a, expr: 'sum('}]}]\n")}})
				return err
			},
			wantBinary: "prometheus",
			wantArg:    "--config.file=",
			wantInLog:  "broken.yaml",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := stack.LookPath(tc.wantBinary); err != nil {
				if testing.Short() {
					t.Skip(err)
				}
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			err := tc.start(ctx)
			var se *stack.StartError
			if !errors.As(err, &se) {
				t.Fatalf("got %v, want a *stack.StartError", err)
			}
			t.Cleanup(func() { _ = os.RemoveAll(filepath.Dir(se.LogFile)) })
			msg := err.Error()
			for _, want := range []string{"start " + tc.wantBinary + ":", se.Binary, tc.wantArg, "log file: " + se.LogFile} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not contain %q", msg, want)
				}
			}
			if filepath.Base(se.Binary) != tc.wantBinary {
				t.Errorf("binary %q, want %s", se.Binary, tc.wantBinary)
			}
			log, readErr := os.ReadFile(se.LogFile)
			if readErr != nil {
				t.Fatalf("the log file the error names: %v", readErr)
			}
			if !strings.Contains(string(log), tc.wantInLog) {
				t.Errorf("log %s does not contain %q:\n%s", se.LogFile, tc.wantInLog, log)
			}
		})
	}
}

func TestLookPathTellsToRunMakeToolsWhenABinaryIsMissing(t *testing.T) {
	t.Setenv(stack.BinEnv, t.TempDir())
	_, err := stack.LookPath("kube-apiserver")
	if !errors.Is(err, stack.ErrMissingBinary) {
		t.Fatalf("got %v, want ErrMissingBinary", err)
	}
	if !strings.Contains(err.Error(), "make tools") {
		t.Errorf("error %q does not say to run make tools", err)
	}
	_, err = stack.StartControlPlane(context.Background(), stack.ControlPlaneOptions{})
	if !errors.Is(err, stack.ErrMissingBinary) {
		t.Errorf("StartControlPlane without binaries: got %v, want ErrMissingBinary", err)
	}
}
