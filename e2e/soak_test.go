package e2e_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/loopwatch/loopwatch/internal/demo"
)

// TestSoak is `make soak`: a healthy operator for 30 minutes under the production rules (default
// `for:` durations and evaluation interval, 30s scrapes) with churn, a rolling restart and a
// leader handover; no loopwatch alert may go pending or fire. It runs only when LOOPWATCH_SOAK is
// set (LOOPWATCH_SOAK_DURATION shortens it, e.g. 6m); the table goes to the test log and, when
// LOOPWATCH_SOAK_TABLE names a file, there.
func TestSoak(t *testing.T) {
	if os.Getenv("LOOPWATCH_SOAK") == "" {
		t.Skip("set LOOPWATCH_SOAK=1 (make soak) to run the 30-minute soak")
	}
	opts := demo.SoakOptions{Out: os.Stdout}
	if d := os.Getenv("LOOPWATCH_SOAK_DURATION"); d != "" {
		var err error
		if opts.Duration, err = time.ParseDuration(d); err != nil {
			t.Fatal(err)
		}
		opts.Step = max(opts.Duration/6, time.Minute)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute+2*max(opts.Duration, 30*time.Minute))
	defer cancel()
	res, err := demo.Soak(ctx, opts)
	var table strings.Builder
	demo.WriteSoakTable(&table, res)
	t.Log("\n" + table.String())
	if path := os.Getenv("LOOPWATCH_SOAK_TABLE"); path != "" {
		if werr := os.WriteFile(path, []byte(table.String()), 0o644); werr != nil {
			t.Error(werr)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if !res.Silent() {
		t.Error("alerts went pending or fired during the healthy soak")
	}
}
