package e2e_test

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"testing"
	"time"

	"github.com/loopwatch/loopwatch/internal/stack"
)

// grafanaIntervals are Grafana's built-in range variables and what the tests use for them: a
// minute holds 60 samples at the tests' 1s scrape interval.
var grafanaIntervals = map[string]string{
	"__rate_interval": "1m",
	"__interval":      "1m",
	"__range":         "5m",
}

var variableRef = regexp.MustCompile(`\$\{([A-Za-z0-9_]+)(?::[a-z]+)?\}|\$([A-Za-z0-9_]+)`)

// substitute replaces Grafana variables in expr the way Grafana does with every template
// variable on "All": a variable with includeAll and an allValue becomes its allValue; any other
// variable gets values[name], which the caller resolves (e.g. from label_values). An unknown
// variable is an error, so a new kind of variable in the generator is noticed.
func substitute(expr string, vars []variable, values map[string]string) (string, error) {
	byName := map[string]variable{}
	for _, v := range vars {
		byName[v.Name] = v
	}
	var errs []string
	out := variableRef.ReplaceAllStringFunc(expr, func(ref string) string {
		m := variableRef.FindStringSubmatch(ref)
		name := m[1] + m[2]
		if iv, ok := grafanaIntervals[name]; ok {
			return iv
		}
		if v, ok := byName[name]; ok && v.IncludeAll && v.AllValue != "" {
			return v.AllValue
		}
		if val, ok := values[name]; ok {
			return val
		}
		errs = append(errs, name)
		return ref
	})
	if len(errs) > 0 {
		sort.Strings(errs)
		return "", fmt.Errorf("no value for variables %v in %q", errs, expr)
	}
	return out, nil
}

var labelValuesQuery = regexp.MustCompile(`^\s*label_values\((.*),\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$`)

// resolveVariables gives each template variable without an "All" value the first value its
// label_values query finds, as Grafana's first option would be.
func resolveVariables(ctx context.Context, prom *stack.Prometheus, vars []variable) (map[string]string, error) {
	values := map[string]string{}
	for _, v := range vars {
		if v.Type != "query" || (v.IncludeAll && v.AllValue != "") {
			continue
		}
		m := labelValuesQuery.FindStringSubmatch(v.query())
		if m == nil {
			return nil, fmt.Errorf("variable %q: query %q is not label_values(selector, label)", v.Name, v.query())
		}
		selector, err := substitute(m[1], vars, values)
		if err != nil {
			return nil, fmt.Errorf("variable %q: %w", v.Name, err)
		}
		got, _, err := prom.API().LabelValues(ctx, m[2], []string{selector}, time.Now().Add(-time.Hour), time.Now())
		if err != nil || len(got) == 0 {
			return nil, fmt.Errorf("variable %q: no values for %s from %s: %v", v.Name, m[2], selector, err)
		}
		values[v.Name] = regexp.QuoteMeta(string(got[0]))
	}
	return values, nil
}

func TestSubstituteGrafanaVariables(t *testing.T) {
	vars := []variable{
		{Name: "cluster", Type: "query", IncludeAll: true, AllValue: ".*"},
		{Name: "job", Type: "query"},
	}
	tests := []struct {
		name    string
		expr    string
		values  map[string]string
		want    string
		wantErr bool
	}{
		{
			name: "an All variable becomes its allValue and the rate interval a minute",
			expr: `rate(x{cluster=~"$cluster"}[$__rate_interval])`,
			want: `rate(x{cluster=~".*"}[1m])`,
		},
		{
			name:   "a braced variable without All takes the resolved value",
			expr:   `x{job=~"${job}", cluster=~"${cluster:regex}"}`,
			values: map[string]string{"job": "mirror"},
			want:   `x{job=~"mirror", cluster=~".*"}`,
		},
		{
			name:    "an unresolved variable is an error, not a silent pass",
			expr:    `x{job=~"$job", pod=~"$pod"}`,
			wantErr: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := substitute(tc.expr, vars, tc.values)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("got %q, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
