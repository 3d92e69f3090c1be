package testrules

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// promtoolPath is where `make tools` builds promtool from the pinned prometheus module.
const promtoolPath = "../bin/promtool"

// TestPromtoolCheckRules runs `promtool check rules` on the generated rule file: the linter
// Prometheus itself applies when loading it.
func TestPromtoolCheckRules(t *testing.T) {
	out, err := runPromtool(t, "check", "rules", rulesFile)
	if err != nil {
		t.Fatalf("promtool check rules %s: %v\n%s", rulesFile, err, out)
	}
}

// TestPromtoolUnitTests runs `promtool test rules` on every test file of this directory.
func TestPromtoolUnitTests(t *testing.T) {
	args := append([]string{"test", "rules"}, testFiles(t)...)
	out, err := runPromtool(t, args...)
	if err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
	t.Logf("promtool test rules:\n%s", out)
}

// runPromtool runs the pinned promtool from this directory, so the test files' relative
// rule_files resolve as they do for `make test-rules`.
func runPromtool(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	bin, err := filepath.Abs(promtoolPath)
	if err != nil {
		t.Fatalf("resolve promtool path: %v", err)
	}
	if _, err := os.Stat(bin); errors.Is(err, os.ErrNotExist) {
		t.Fatalf("promtool is missing at %s: run `make tools` from the repository root first", bin)
	} else if err != nil {
		t.Fatalf("stat promtool: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	return exec.CommandContext(ctx, bin, args...).CombinedOutput()
}
