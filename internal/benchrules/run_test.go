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
	o.RuleFile, o.Intervals, o.Evals, o.History, o.Scraped, o.Target = "", []string{"0.5s"}, 0, time.Minute, -time.Second, 0
	err := o.validate()
	if err == nil {
		t.Fatal("no error for six invalid options")
	}
	for _, want := range []string{"rule file", `interval "0.5s"`, "evals", "history", "scraped", "target"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}
