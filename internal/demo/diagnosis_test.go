package demo

import (
	"testing"

	"github.com/loopwatch/loopwatch/diagnose"
	"github.com/loopwatch/loopwatch/gen"
)

// An unattributed finding is right only for the cause asked and, when a pod is asked, only when
// its strongest instance names that pod.
func TestJudgeUnattributed(t *testing.T) {
	missing := gen.ControllerMetricsMissing.FullName()
	finding := func(alert, pod string) diagnose.Report {
		return diagnose.Report{Unattributed: []diagnose.Cause{{Alert: alert, Labels: map[string]string{"pod": pod}}}}
	}
	for _, tc := range []struct {
		name   string
		report diagnose.Report
		want   Diagnosis
		right  bool
		said   string
	}{
		{"the cause, the pod asked", finding(missing, "backup-operator-1"), Diagnosis{Cause: gen.ControllerMetricsMissing, Pod: "backup-operator-1"}, true, "unattributed: " + missing + " (pod backup-operator-1)"},
		{"the cause, another pod", finding(missing, "backup-operator-0"), Diagnosis{Cause: gen.ControllerMetricsMissing, Pod: "backup-operator-1"}, false, "unattributed: " + missing + " (pod backup-operator-0)"},
		{"the cause, no pod asked", finding(missing, "backup-operator-0"), Diagnosis{Cause: gen.ControllerMetricsMissing}, true, "unattributed: " + missing + " (pod backup-operator-0)"},
		{"another cause", finding(gen.WriteFight.FullName(), ""), Diagnosis{Cause: gen.ControllerMetricsMissing}, false, "unattributed: " + gen.WriteFight.FullName()},
		{"no finding", diagnose.Report{}, Diagnosis{Cause: gen.ControllerMetricsMissing}, false, "no unattributed finding"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := judgeUnattributed(tc.report, tc.want)
			if d.Right != tc.right || d.Said != tc.said {
				t.Errorf("got right %v, said %q; want right %v, said %q", d.Right, d.Said, tc.right, tc.said)
			}
			if !d.Right && d.Report == "" {
				t.Error("a wrong conclusion carries no report")
			}
		})
	}
}
