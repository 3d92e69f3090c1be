package cli

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
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

// TestAnalyzeCommandWritesHTML: --html writes the page and says so, printing the text report
// only when -o asks for it; several logs are read as one (the same log twice: its events once).
func TestAnalyzeCommandWritesHTML(t *testing.T) {
	fixture := filepath.Join("..", "testdata", "analyze", "incident.jsonl")
	windows := []string{"--fight-window=1m", "--hot-window=1m", "--race-window=1m"}
	golden, err := os.ReadFile(filepath.Join("..", "testdata", "analyze", "incident.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		args     []string
		wantText bool
		wantErr  string
	}{
		{"writes the page and a line saying so", []string{fixture}, false, "58 events, 1 fights, 1 hot objects, 1 replica races"},
		{"prints the text report too with -o text", []string{fixture, "-o", "text"}, true, ""},
		{"reads two logs as one", []string{fixture, fixture}, false, "58 events, 1 fights"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			page := filepath.Join(t.TempDir(), "report.html")
			cmd := NewAuditCommand()
			var out, stderr bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetErr(&stderr)
			cmd.SetArgs(append(append([]string{"analyze", "--html", page}, tc.args...), windows...))
			if err := cmd.Execute(); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(page)
			if err != nil || !bytes.HasPrefix(b, []byte("<!DOCTYPE html>")) || !bytes.Contains(b, []byte(`data-kind="fight"`)) {
				t.Fatalf("no HTML report with the fight written (%v)", err)
			}
			if got := out.String() == string(golden); got != tc.wantText {
				t.Errorf("text report printed: %v, want %v:\n%s", got, tc.wantText, out.String())
			}
			if !strings.Contains(stderr.String(), tc.wantErr) {
				t.Errorf("stderr %q, want %q", stderr.String(), tc.wantErr)
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

func TestExporterCommandIngestsAFileAndServesMetrics(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := NewExporterCommand()
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	tokenFile := filepath.Join(t.TempDir(), "scrape-token")
	if err := os.WriteFile(tokenFile, []byte("scrape-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd.SetArgs([]string{
		"--listen-address=" + addr, "--insecure-http", "--ingest-file=" + filepath.Join("..", "testdata", "analyze", "incident.jsonl"),
		"--fight-window=1m", "--hot-window=1m", "--race-window=1m", "--metrics-token-file=" + tokenFile,
	})
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("exporter command: %v", err)
		}
	}()
	var body string
	deadline := time.Now().Add(10 * time.Second)
	scrape := func(token string) (*http.Response, error) {
		req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/metrics", nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		return http.DefaultClient.Do(req)
	}
	for {
		resp, err := scrape("scrape-secret")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics not served: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, want := range []string{
		`loopwatch_audit_fight_handoffs{actor_a="system:serviceaccount:team-a:labeler",actor_b="system:serviceaccount:team-b:janitor"`,
		`loopwatch_audit_replica_race_pods{actor="system:serviceaccount:apps:syncer"`,
		`loopwatch_audit_dropped_events_total{reason="malformed"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	resp, err := scrape("")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("/metrics without credentials answered %d, want 401", resp.StatusCode)
	}
	resp, err = http.Post("http://"+addr+"/audit", "application/json", strings.NewReader(`{"items":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("webhook without credentials answered %d, want 404 (not served)", resp.StatusCode)
	}
}

// TestDocsNameEveryExporterFlag: the Flags table of docs/exporter.md lists every flag of the
// command.
func TestDocsNameEveryExporterFlag(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "docs", "exporter.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(readme), "## Flags")
	section, _, _ = strings.Cut(section, "\n## ")
	NewExporterCommand().Flags().VisitAll(func(f *pflag.Flag) {
		if !strings.Contains(section, "`--"+f.Name+"`") {
			t.Errorf("docs/exporter.md's Flags section does not name --%s", f.Name)
		}
	})
}
