package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAnalyzeCommandWritesTheGoldenReport(t *testing.T) {
	fixture := filepath.Join("..", "testdata", "analyze", "incident.jsonl")
	for _, tc := range []struct {
		name   string
		args   []string
		golden string
	}{
		{"writes text by default", []string{"analyze", fixture, "--fight-window=1m", "--hot-window=1m", "--race-window=1m"}, "incident.txt"},
		{"writes json with -o json", []string{"analyze", fixture, "-o", "json", "--fight-window=1m", "--hot-window=1m", "--race-window=1m"}, "incident.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := NewAuditCommand()
			var out bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetArgs(tc.args)
			if err := cmd.Execute(); err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join("..", "testdata", "analyze", tc.golden))
			if err != nil {
				t.Fatal(err)
			}
			if out.String() != string(want) {
				t.Fatalf("output differs from %s:\n%s", tc.golden, out.String())
			}
		})
	}
}

func TestAnalyzeCommandRefusesUnknownFormat(t *testing.T) {
	cmd := NewAuditCommand()
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs([]string{"analyze", "-o", "yaml", "x"})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), `unknown output format "yaml"`) {
		t.Fatalf("got %v", err)
	}
}

func TestExporterCommandRefusesMissingCredentials(t *testing.T) {
	cmd := NewExporterCommand()
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs([]string{"--listen-address=127.0.0.1:0"})
	err := cmd.Execute()
	if err == nil || !strings.Contains(err.Error(), "tls cert and key files are required") || !strings.Contains(err.Error(), "client CA file or a bearer token") {
		t.Fatalf("got %v", err)
	}
}
