package testrules

import (
	"slices"
	"testing"
)

// TestTestFilesEvaluateEveryGroupInOrder fails when a test file does not load the generated rule
// file, or its group_eval_order misses a group, lists an alerting group before a recording
// group, or lists the recording groups in another order than the rule file (a recording group
// may read what one before it recorded at the same timestamp: the 3d error ratio reads the day
// sums of the coarse SLO group). promtool gives unlisted groups position 0, so a missing group
// would silently be evaluated first.
func TestTestFilesEvaluateEveryGroupInOrder(t *testing.T) {
	groups := loadRules(t)
	for path, f := range loadTestFiles(t) {
		if want := rulesFileFrom(t, path); !slices.Equal(f.RuleFiles, []string{want}) {
			t.Errorf("%s: rule_files = %v, want [%s]", path, f.RuleFiles, want)
		}
		lastRecording, firstAlerting := -1, len(f.GroupEvalOrder)
		for _, g := range groups.Groups {
			i := slices.Index(f.GroupEvalOrder, g.Name)
			if i < 0 {
				t.Errorf("%s: group_eval_order misses group %s", path, g.Name)
				continue
			}
			if isRecordingGroup(g.Rules) {
				if i < lastRecording {
					t.Errorf("%s: group_eval_order lists recording group %s before %s, unlike the rule file", path, g.Name, f.GroupEvalOrder[lastRecording])
				}
				lastRecording = max(lastRecording, i)
			} else {
				firstAlerting = min(firstAlerting, i)
			}
		}
		if lastRecording > firstAlerting {
			t.Errorf("%s: group_eval_order %v lists an alerting group before a recording group", path, f.GroupEvalOrder)
		}
		for _, name := range f.GroupEvalOrder {
			if !slices.ContainsFunc(groups.Groups, func(g rulefmtGroup) bool { return g.Name == name }) {
				t.Errorf("%s: group_eval_order names group %s, which the rule file does not define", path, name)
			}
		}
	}
}
