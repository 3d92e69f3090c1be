package diagnose

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Charts are the evidence series of a report's findings over its window: what the HTML report
// draws. A report holds each signal's value when the finding last held; Charts hold how it got
// there.
type Charts struct {
	// series are the series of each evidence query, as the range query over the window returned
	// them.
	series map[string][]series
	// Skipped are the queries not fetched: beyond maxChartQueries, or failed (the error).
	Skipped []string
}

// maxChartQueries bounds the range queries FetchCharts makes: the report's evidence queries,
// the strongest findings' first.
const maxChartQueries = 120

// chartQueries are the distinct evidence queries of a report, controllers' causes in report
// order, then the unattributed findings.
func chartQueries(r Report) []string {
	var out []string
	add := func(cs []Cause) {
		for _, c := range cs {
			for _, e := range c.Evidence {
				if e.Query != "" && !slices.Contains(out, e.Query) {
					out = append(out, e.Query)
				}
			}
		}
	}
	for _, c := range r.Controllers {
		add(c.Causes)
	}
	add(r.Unattributed)
	return out
}

// FetchCharts runs every evidence query of r over r's window, at its step, against the
// Prometheus of opts (its timeout, response bound and concurrency apply), for the HTML report.
// A query that fails is listed in Skipped, not an error: the report is still worth reading
// without that chart. It fails only when opts are invalid.
func FetchCharts(ctx context.Context, opts Options, r Report) (Charts, error) {
	opts, err := opts.complete()
	if err != nil {
		return Charts{}, err
	}
	client, err := newPromClient(opts.Prometheus, opts.Timeout, opts.MaxResponseBytes)
	if err != nil {
		return Charts{}, err
	}
	ch := Charts{series: map[string][]series{}}
	queries := chartQueries(r)
	if len(queries) > maxChartQueries {
		ch.Skipped = append(ch.Skipped, queries[maxChartQueries:]...)
		queries = queries[:maxChartQueries]
	}
	step := time.Duration(r.Window.StepSeconds * float64(time.Second))
	if step <= 0 {
		step = time.Minute
	}
	var mu sync.Mutex
	sem := make(chan struct{}, opts.Concurrency)
	var wg sync.WaitGroup
	for _, q := range queries {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			m, _, err := client.queryRange(ctx, q, r.Window.Start, r.Window.End, step)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				ch.Skipped = append(ch.Skipped, q+": "+err.Error())
				return
			}
			ch.series[q] = fromMatrix(m)
		}()
	}
	wg.Wait()
	slices.Sort(ch.Skipped)
	return ch, nil
}

// lines returns the series of query that are the evidence rows' (same labels), in the rows'
// order, at most max.
func (c Charts) lines(query string, rows []Evidence, max int) []series {
	var out []series
	for _, row := range rows {
		want := labelKey(row.Labels)
		for _, s := range c.series[query] {
			l := make(map[string]string, len(s.labels))
			for k, v := range s.labels {
				if k != "__name__" {
					l[k] = v
				}
			}
			if labelKey(l) == want && !slices.ContainsFunc(out, func(x series) bool { return labelKey(x.labels) == labelKey(s.labels) }) {
				out = append(out, s)
			}
		}
		if len(out) == max {
			break
		}
	}
	return out
}
