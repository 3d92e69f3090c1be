package main

import (
	"bytes"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/loopwatch/loopwatch/diagnose"
)

func TestDiagnoseCommandErrors(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	_ = l.Close()
	for _, tc := range []struct {
		name string
		args []string
		want string
		is   error
	}{
		{"the Prometheus URL is required", []string{"diagnose"}, `required flag(s) "prometheus" not set`, nil},
		{"an unknown output format is refused", []string{"diagnose", "--prometheus", closed, "-o", "yaml"}, "--output must be text, json or html", nil},
		{"an invalid config is refused before any query", []string{"diagnose", "--prometheus", closed, "--config", "testdata/nosuch.yaml"}, "read config", nil},
		{"every option out of range is named", []string{"diagnose", "--prometheus", closed, "--since", "-5m", "--timeout", "-1s", "--max-response-bytes", "-1"}, "since must be positive, got -5m0s\ntimeout must be positive, got -1s\nmax-response-bytes must be positive, got -1", nil},
		{"an unreachable Prometheus is an error naming it", []string{"diagnose", "--prometheus", closed, "--timeout", "2s"}, closed, diagnose.ErrUnreachable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := newRootCommand()
			var out bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetErr(&out)
			cmd.SetArgs(tc.args)
			err := cmd.Execute()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v, want %v", err, tc.is)
			}
		})
	}
}
