package stack_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loopwatch/loopwatch/internal/stack"
)

const healthyRules = `groups:
  - name: healthy
    rules:
      - record: job:up:sum
        expr: sum by (job) (up)
      - alert: AlwaysFiring
        expr: vector(1)
        labels:
          severity: info
        annotations:
          summary: Fires from the first evaluation on.
      - alert: PendingForAnHour
        expr: vector(1)
        for: 1h
`

// failingRules fails at every evaluation, not at load time: the right-hand side has two series
// in the match group {}, which one-to-one matching rejects.
const failingRules = `groups:
  - name: failing
    rules:
      - record: duplicate:match:group
        expr: vector(1) * on() (label_replace(vector(1), "a", "b", "", "") or label_replace(vector(1), "a", "c", "", ""))
`

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestPrometheus(t *testing.T) {
	stack.SkipShort(t)
	prom := stack.NewTestPrometheus(t, stack.PrometheusOptions{
		RuleFiles:  []string{writeFile(t, "healthy.yaml", healthyRules), writeFile(t, "failing.yaml", failingRules)},
		ScrapeSelf: true,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := prom.WaitForTargetsUp(ctx); err != nil {
		t.Fatal(err)
	}
	if err := prom.WaitForRuleEvaluations(ctx, 2); err != nil {
		t.Fatal(err)
	}

	t.Run("a recording rule over scraped series yields a sample per job", func(t *testing.T) {
		v, err := prom.WaitForQuery(ctx, `job:up:sum{job="prometheus"}`)
		if err != nil {
			t.Fatal(err)
		}
		if len(v) != 1 || v[0].Value != 1 {
			t.Errorf("job:up:sum = %v, want one sample of 1", v)
		}
	})

	t.Run("an alert with a matching label is found firing", func(t *testing.T) {
		a, err := prom.WaitForAlert(ctx, "AlwaysFiring", map[string]string{"severity": "info"})
		if err != nil {
			t.Fatal(err)
		}
		if a.Annotations["summary"] != "Fires from the first evaluation on." {
			t.Errorf("annotations %v, want the rule's summary", a.Annotations)
		}
	})

	t.Run("an alert whose labels differ is not reported firing", func(t *testing.T) {
		short, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, err := prom.WaitForAlert(short, "AlwaysFiring", map[string]string{"severity": "critical"})
		if err == nil || !strings.Contains(err.Error(), `severity="info"`) {
			t.Errorf("got %v, want a timeout listing the active AlwaysFiring{severity=\"info\"}", err)
		}
	})

	t.Run("an alert waiting out its for duration is active but not firing", func(t *testing.T) {
		a, err := prom.WaitForActiveAlert(ctx, "PendingForAnHour", nil)
		if err != nil {
			t.Fatal(err)
		}
		if a.State != "pending" {
			t.Errorf("state %q, want pending", a.State)
		}
		short, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if _, err := prom.WaitForAlert(short, "PendingForAnHour", nil); err == nil {
			t.Error("WaitForAlert found PendingForAnHour firing")
		}
	})

	t.Run("rule health names the failing group and only it", func(t *testing.T) {
		failures, err := prom.EvaluationFailures(ctx)
		if err != nil {
			t.Fatal(err)
		}
		failingSeen := false
		for group, n := range failures {
			failing := strings.HasSuffix(group, ";failing")
			failingSeen = failingSeen || failing
			if failing && n < 1 || !failing && n != 0 {
				t.Errorf("evaluation failures of %s = %v", group, n)
			}
		}
		if !failingSeen {
			t.Errorf("no evaluation failure count for the failing group in %v", failures)
		}
		err = prom.RuleHealth(ctx)
		if err == nil {
			t.Fatal("RuleHealth reported no problem, want the failing group")
		}
		msg := err.Error()
		for _, want := range []string{`group "failing" rule "duplicate:match:group"`, "evaluation failures"} {
			if !strings.Contains(msg, want) {
				t.Errorf("RuleHealth error %q does not mention %q", msg, want)
			}
		}
		if strings.Contains(msg, `group "healthy"`) {
			t.Errorf("RuleHealth error %q blames the healthy group", msg)
		}
	})
}
