package gen

import (
	"fmt"
	"regexp/syntax"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
)

// Generated tests run on the user's own selectors: the input series of a case carry label values
// that every configured matcher accepts, found from the matchers themselves (a value an equality
// matcher names, a shortest string a regular expression matches, ...), so that
// `selectors.controller: namespace="payments", job=~"ctl-.+"` gets input in namespace payments
// from a job named like ctl-a.

// The fixtures' target labels: what a ServiceMonitor scrape gives every series of one pod.
var (
	controllerTarget = Labels{"namespace": "backup-system", "job": "backup-controller-metrics", "pod": "backup-controller-6d8f9c7b5-x2kqp", "instance": "10.244.1.17:8443"}
	exporterTarget   = Labels{"namespace": "monitoring", "job": "loopwatch-exporter", "pod": "loopwatch-exporter-7c9d8-kq2xz", "instance": "10.244.2.9:8443"}
	apiserverTarget  = Labels{"namespace": "default", "job": "apiserver", "instance": "10.0.0.10:6443"}
)

// testCluster is the cluster label value of every generated series: every case runs on
// multi-cluster data, so a rule that drops the cluster label fails its test.
const testCluster = "prod-eu-1"

// satisfy returns base changed as little as needed for every matcher of selector to accept it.
func satisfy(selector string, base Labels) (Labels, error) {
	ms, err := promqlParser.ParseMetricSelector("{" + selector + "}")
	if err != nil {
		return nil, fmt.Errorf("selector %q: %w", selector, err)
	}
	byName := map[string][]*labels.Matcher{}
	var names []string
	for _, m := range ms {
		if _, ok := byName[m.Name]; !ok {
			names = append(names, m.Name)
		}
		byName[m.Name] = append(byName[m.Name], m)
	}
	out := base.With()
	for _, name := range names {
		matchers := byName[name]
		candidates := []string{out[name]}
		for _, m := range matchers {
			switch m.Type {
			case labels.MatchEqual:
				candidates = append(candidates, m.Value)
			case labels.MatchRegexp:
				if v, ok := regexExample(m.Value); ok {
					candidates = append(candidates, v)
				}
			}
		}
		candidates = append(candidates, "x", strings.TrimPrefix(name, "_")+"-a")
		found := false
		for _, c := range candidates {
			if matchesAll(matchers, c) {
				out = out.With(name, c)
				found = true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("selector %q: no label value found that every matcher on %q accepts: generated tests cannot build input for it", selector, name)
		}
	}
	return out, nil
}

func matchesAll(ms []*labels.Matcher, v string) bool {
	for _, m := range ms {
		if !m.Matches(v) {
			return false
		}
	}
	return true
}

// regexExample returns a short string the (fully anchored) regular expression matches.
func regexExample(expr string) (string, bool) {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return "", false
	}
	var b strings.Builder
	if !writeExample(&b, re.Simplify()) {
		return "", false
	}
	return b.String(), true
}

func writeExample(b *strings.Builder, re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpNoMatch:
		return false
	case syntax.OpLiteral:
		b.WriteString(string(re.Rune))
	case syntax.OpCharClass:
		if len(re.Rune) == 0 {
			return false
		}
		b.WriteRune(re.Rune[0])
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		b.WriteByte('a')
	case syntax.OpCapture:
		return writeExample(b, re.Sub[0])
	case syntax.OpPlus:
		return writeExample(b, re.Sub[0])
	case syntax.OpRepeat:
		for range re.Min {
			if !writeExample(b, re.Sub[0]) {
				return false
			}
		}
	case syntax.OpConcat:
		for _, s := range re.Sub {
			if !writeExample(b, s) {
				return false
			}
		}
	case syntax.OpAlternate:
		for _, s := range re.Sub {
			var alt strings.Builder
			if writeExample(&alt, s) {
				b.WriteString(alt.String())
				return true
			}
		}
		return false
	}
	// Star, quest, empty match and the zero-width assertions write nothing.
	return true
}

// otherReplica returns the labels of another replica of l's workload: another pod and instance.
func otherReplica(l Labels) Labels {
	return l.With("pod", l["pod"]+"-b", "instance", "10.244.1.18:8443")
}
