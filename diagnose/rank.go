package diagnose

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// finding is one check whose condition held in the window, for one controller (or for none:
// unattributed), with every alert instance that held.
type finding struct {
	check *check
	run   *checkRun
	how   attribution
	// join and joinDetail say how an audit actor was matched to the workload (byActor only):
	// the strongest join of the finding's instances.
	join       Join
	joinDetail string
	// instances are the alert instances that held, strongest first.
	instances []instance
	// op and threshold are the alert's first comparison with a constant, which its value is
	// measured against.
	op        string
	threshold *float64
	// Set by rank.
	role        Role
	explainedBy *finding
}

// instance is one alert instance (one label set) over the window.
type instance struct {
	labels map[string]string
	// value is the alert expression's value when the condition last held, peak its largest.
	value, peak float64
	// first and last bound the last uninterrupted stretch during which the condition held.
	first, last time.Time
	// active: the condition holds at the end of the window.
	active bool
}

// strength orders findings by how strongly the data points at them: failures before monitoring
// gaps; a condition holding now and not receding before one that held earlier or is fading;
// then how far past its threshold the value is; then how long it has held.
type strength struct {
	gap    bool
	state  int // 2: holds now and is not receding, 1: holds now but fading, 0: held earlier
	excess float64
	held   time.Duration
}

// maxExcess caps how far past its threshold a value counts, so that one absurd value (a 0
// threshold, a division by almost nothing) does not outrank everything.
const maxExcess = 1000

func (f *finding) strength() strength {
	return strength{gap: f.check.gap, state: f.instances[0].state(f.op), excess: excess(f.op, f.threshold, f.instances[0].value), held: f.instances[0].last.Sub(f.instances[0].first)}
}

// state is 2 when the instance holds now at (or near) its peak, 1 when it holds now at less than
// half its peak (an above-threshold comparison that is fading), 0 when it held only earlier.
func (in instance) state(op string) int {
	switch {
	case !in.active:
		return 0
	case (op == ">" || op == ">=") && in.peak > 0 && in.value < in.peak/2:
		return 1
	}
	return 2
}

// excess is how many times over its threshold value is, in the direction of the comparison.
func excess(op string, threshold *float64, value float64) float64 {
	if threshold == nil || math.IsNaN(value) {
		return 1
	}
	th := *threshold
	var x float64
	switch op {
	case ">", ">=":
		if th <= 0 {
			return 1
		}
		x = value / th
	case "<", "<=":
		if value <= 0 {
			return maxExcess
		}
		x = th / value
	default:
		return 1
	}
	return min(max(x, 0), maxExcess)
}

// compareStrength orders a before b when a is the stronger finding.
func compareStrength(a, b *finding) int {
	sa, sb := a.strength(), b.strength()
	if sa.gap != sb.gap {
		if sb.gap {
			return -1
		}
		return 1
	}
	return cmp.Or(
		cmp.Compare(sb.state, sa.state),
		cmp.Compare(sb.excess, sa.excess),
		cmp.Compare(sb.held, sa.held),
		cmp.Compare(a.check.alert.FullName(), b.check.alert.FullName()),
	)
}

// rank orders one controller's findings: the most likely cause first, then the other findings
// nothing explains (contributing causes), then symptoms, each after the finding that explains
// it, then the monitoring gaps (role gap: not failures of the controller, they say which checks
// could not run). A finding A explains B when A's check lists B's alert (a stuck worker explains a growing
// queue, N+1 calls explain slow reconciles, a write fight explains a high PATCH rate), A held
// when B's last stretch began or later (an earlier, unrelated blip explains nothing), and A is
// not weaker in time than B (a cause fading away does not explain a symptom at its peak).
func rank(fs []*finding, step time.Duration) []*finding {
	fs = slices.Clone(fs)
	slices.SortStableFunc(fs, compareStrength)
	for _, b := range fs {
		b.explainedBy = nil
		for _, a := range fs {
			if a != b && a.check.explainsAlert(b.check.alert) && !a.instances[0].last.Add(step).Before(b.instances[0].first) &&
				a.instances[0].state(a.op) >= b.instances[0].state(b.op) {
				b.explainedBy = a
				break
			}
		}
	}
	var out, symptoms, gaps []*finding
	for _, f := range fs {
		if f.check.gap {
			f.role, f.explainedBy = RoleGap, nil
			gaps = append(gaps, f)
			continue
		}
		if f.explainedBy == nil {
			f.role = RoleContributing
			if len(out) == 0 {
				f.role = RoleCause
			}
			out = append(out, f)
		} else {
			f.role = RoleSymptom
			symptoms = append(symptoms, f)
		}
	}
	// Symptoms follow their root cause's position, closer links first.
	root := func(f *finding) (int, int) {
		depth := 0
		for f.explainedBy != nil && depth <= len(fs) {
			f, depth = f.explainedBy, depth+1
		}
		return slices.Index(out, f), depth
	}
	slices.SortStableFunc(symptoms, func(a, b *finding) int {
		ra, da := root(a)
		rb, db := root(b)
		return cmp.Or(cmp.Compare(ra, rb), cmp.Compare(da, db))
	})
	return append(append(out, symptoms...), gaps...)
}
