package diagnose

import (
	"strings"
	"testing"
	"time"
)

func TestInline(t *testing.T) {
	in := &inliner{
		missing: map[string]string{
			"job:requests:rate5m": `sum by (job, method) (rate(requests_total{job!=""}[5m]))`,
			"job:latency:mean5m":  `sum by (job) (rate(t_sum[5m])) / (sum by (job) (rate(t_count[5m])) > 0)`,
			"job:patches:rate5m":  `sum by (job) (job:requests:rate5m{method="PATCH"})`,
			"job:seen:last":       "max by (job) (timestamp(up)) or last_over_time(job:seen:last[1h])",
		},
		interval: time.Minute,
	}
	for _, tc := range []struct{ name, query, want string }{
		{
			name:  "a query without missing recordings is returned as written",
			query: "recorded:series:sum > 3\nand\nother",
			want:  "recorded:series:sum > 3\nand\nother",
		},
		{
			name:  "a missing recording becomes its expression",
			query: `job:requests:rate5m > 10`,
			want:  `(sum by (job, method) (rate(requests_total{job!=""}[5m]))) > 10`,
		},
		{
			name:  "the recording's matchers move onto the rule's inputs",
			query: `job:requests:rate5m{method="PATCH"} > 10`,
			want:  `(sum by (job, method) (rate(requests_total{job!="",method="PATCH"}[5m]))) > 10`,
		},
		{
			name:  "a recording that reads another recording is inlined all the way down, matchers carried",
			query: `job:patches:rate5m{job="a"} > 10`,
			want:  `(sum by (job) ((sum by (job, method) (rate(requests_total{job!="",job="a",method="PATCH"}[5m]))))) > 10`,
		},
		{
			name:  "a range over a missing recording becomes a subquery at the rule interval",
			query: `job:latency:mean5m < avg_over_time(job:latency:mean5m[2h]) / 10`,
			want:  `(sum by (job) (rate(t_sum[5m])) / (sum by (job) (rate(t_count[5m])) > 0)) < avg_over_time((sum by (job) (rate(t_sum[5m])) / (sum by (job) (rate(t_count[5m])) > 0))[2h:1m]) / 10`,
		},
		{
			name:  "a subquery over a day is coarser than the rule interval",
			query: `avg_over_time(job:latency:mean5m[1d])`,
			want:  `avg_over_time((sum by (job) (rate(t_sum[5m])) / (sum by (job) (rate(t_count[5m])) > 0))[1d:10m])`,
		},
		{
			name:  "a range some time back becomes a subquery that far back",
			query: `last_over_time(job:latency:mean5m[30m] offset 1d)`,
			want:  `last_over_time((sum by (job) (rate(t_sum[5m])) / (sum by (job) (rate(t_count[5m])) > 0))[30m:1m] offset 1d)`,
		},
		{
			name:  "a recording that reads its own past values reads nothing in their place",
			query: `time() - last_over_time(job:seen:last[15m]) < 86400`,
			want:  `time() - last_over_time((max by (job) (timestamp(up)) or last_over_time((vector(0) < 0)[1h:1m]))[15m:1m]) < 86400`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := in.rewrite(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("rewrite(%q) =\n%s\nwant\n%s", tc.query, got, tc.want)
			}
			if _, err := promqlParser.ParseExpr(got); err != nil {
				t.Errorf("rewritten query does not parse: %v", err)
			}
		})
	}
	t.Run("an offset on an instant read of a missing recording is refused", func(t *testing.T) {
		_, err := in.rewrite(`job:requests:rate5m offset 1h`)
		if err == nil || !strings.Contains(err.Error(), "offset") {
			t.Errorf("error %v, want one about offset", err)
		}
	})
}
