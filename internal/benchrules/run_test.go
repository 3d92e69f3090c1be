package benchrules

import (
	"strings"
	"testing"
	"time"
)

func TestOptionsValidateReportsEveryProblem(t *testing.T) {
	if err := DefaultOptions().validate(); err != nil {
		t.Fatalf("default options: %v", err)
	}
	o := DefaultOptions()
	o.RuleFile, o.Intervals, o.Evals, o.History, o.Scraped, o.Head, o.Target = "", []string{"0.5s"}, 0, time.Minute, -time.Second, -time.Hour, 0
	err := o.validate()
	if err == nil {
		t.Fatal("no error for seven invalid options")
	}
	for _, want := range []string{"rule file", `interval "0.5s"`, "evals", "history", "scraped", "head", "target"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}

func TestOptionsValidateBoundsTheHead(t *testing.T) {
	for _, c := range []struct {
		head, history time.Duration
		ok            bool
	}{
		{0, 72 * time.Hour, true},
		{2 * time.Hour, 72 * time.Hour, true},
		{2*time.Hour + time.Minute, 72 * time.Hour, false}, // the head would be compacted within the run
		{2 * time.Hour, 2 * time.Hour, false},              // the history's oldest hour must lie in blocks
		{-time.Minute, 72 * time.Hour, false},
	} {
		o := DefaultOptions()
		o.Head, o.History = c.head, c.history
		if err := o.validate(); (err == nil) != c.ok {
			t.Errorf("head %s, history %s: error %v, want ok=%v", c.head, c.history, err, c.ok)
		}
	}
}
