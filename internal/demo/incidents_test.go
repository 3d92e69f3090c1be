package demo

import (
	"flag"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/loopwatch/loopwatch/gen"
	"github.com/loopwatch/loopwatch/operator/app"
)

// The matrix covers the thirteen incidents of the detection issue, in scenes named by them.
var thirteen = []string{
	"queue-backlog", "slow-reconcile", "stuck-worker", "error-storm", "n-plus-one", "hot-loop",
	"write-fight", "replica-race", "leader-lost", "periodic-storm", "relist-storm",
	"stuck-finalizer", "missing-metrics",
}

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

func TestScenarioTable(t *testing.T) {
	seen := map[string]bool{}
	for _, inc := range Scenarios() {
		if !dnsLabel.MatchString(inc.Name) || len(inc.Name) > 40 || seen[inc.Name] {
			t.Errorf("scenario %q: needs a unique DNS label of at most 40 characters (its namespaces add a suffix)", inc.Name)
		}
		seen[inc.Name] = true
		if inc.What == "" {
			t.Errorf("scenario %s says nothing about what it does", inc.Name)
		}
		switch {
		case len(inc.Expect) == 0 && inc.Watch <= 0:
			t.Errorf("scenario %s expects no alert but watches for no time", inc.Name)
		case len(inc.Expect) > 0 && inc.Watch > 0:
			t.Errorf("scenario %s expects alerts: Watch has no meaning", inc.Name)
		}
		for a := range inc.Known {
			if !containsAlert(inc.Expect, a) {
				t.Errorf("scenario %s: known miss %s is not an expected alert", inc.Name, a.FullName())
			}
		}
		for _, a := range inc.Expect {
			if !containsAlert(gen.Alerts(), a) {
				t.Errorf("scenario %s expects %v, which gen does not declare", inc.Name, a)
			}
		}
		if inc.Operator.Pods > ScenePods {
			t.Errorf("scenario %s runs %d pods; a scene has %d", inc.Name, inc.Operator.Pods, ScenePods)
		}
	}
	for _, n := range thirteen {
		if !seen[n] {
			t.Errorf("the matrix lacks incident %q", n)
		}
	}
	if _, err := Scenario(DefaultScenario); err != nil {
		t.Error(err)
	}
}

// Every flag a scene gives the operator is one the operator has, with a value it accepts.
func TestScenarioFlagsParse(t *testing.T) {
	for _, inc := range Scenarios() {
		s := &Scene{Namespace: "ns-1"}
		for i := range max(inc.Operator.Pods, 1) {
			flags := append(append([]string{}, inc.Operator.Flags...), inc.Operator.PodFlags[i]...)
			var args []string
			for _, f := range flags {
				args = append(args, strings.ReplaceAll(f, "{ns}", s.Namespace))
			}
			o := app.Defaults()
			fs := flag.NewFlagSet("backup-operator", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			o.BindFlags(fs)
			if err := fs.Parse(s.operatorArgs(args)); err != nil {
				t.Errorf("scenario %s, pod %d: %v", inc.Name, i, err)
			}
		}
	}
}

// The rules of the scenes build, tests and all.
func TestConfigBuilds(t *testing.T) {
	m, err := gen.Build(Config())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Files(); err != nil {
		t.Fatal(err)
	}
}

func containsAlert(all []*gen.Alert, a *gen.Alert) bool {
	for _, x := range all {
		if x == a {
			return true
		}
	}
	return false
}
