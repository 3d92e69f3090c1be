package benchrules

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// apiClient reads Prometheus' HTTP API with a timeout long enough for the slowest rule query.
type apiClient struct {
	base string
	http *http.Client
}

func newAPIClient(base string) *apiClient {
	return &apiClient{base: base, http: &http.Client{Timeout: 2 * time.Minute}}
}

// maxAPIResponse bounds what the benchmark reads from one API answer.
const maxAPIResponse = 256 << 20

func (c *apiClient) get(ctx context.Context, path string, params url.Values, out any) error {
	u := c.base + path
	if len(params) > 0 {
		u += "?" + params.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAPIResponse))
	if err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	var env struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return fmt.Errorf("GET %s: %s: decode: %w", path, resp.Status, err)
	}
	if env.Status != "success" {
		return fmt.Errorf("GET %s: %s: %s", path, resp.Status, env.Error)
	}
	if err := json.Unmarshal(env.Data, out); err != nil {
		return fmt.Errorf("GET %s: decode data: %w", path, err)
	}
	return nil
}

// apiRuleGroup is a group of /api/v1/rules.
type apiRuleGroup struct {
	Name           string    `json:"name"`
	File           string    `json:"file"`
	Interval       float64   `json:"interval"`
	EvaluationTime float64   `json:"evaluationTime"`
	LastEvaluation time.Time `json:"lastEvaluation"`
	Rules          []apiRule `json:"rules"`
}

// apiRule is a rule of /api/v1/rules (recording or alerting).
type apiRule struct {
	Name           string     `json:"name"`
	Query          string     `json:"query"`
	Type           string     `json:"type"`
	Health         string     `json:"health"`
	LastError      string     `json:"lastError"`
	EvaluationTime float64    `json:"evaluationTime"`
	LastEvaluation time.Time  `json:"lastEvaluation"`
	Alerts         []apiAlert `json:"alerts"`
}

type apiAlert struct {
	State string `json:"state"`
}

// ruleGroups reads /api/v1/rules; with alerts false the active alerts are left out, which keeps
// the answer small enough to poll every second.
func (c *apiClient) ruleGroups(ctx context.Context, alerts bool) ([]apiRuleGroup, error) {
	var data struct {
		Groups []apiRuleGroup `json:"groups"`
	}
	params := url.Values{}
	if !alerts {
		params.Set("exclude_alerts", "true")
	}
	if err := c.get(ctx, "/api/v1/rules", params, &data); err != nil {
		return nil, err
	}
	return data.Groups, nil
}

// queryStats is what an instant query with stats=all reports.
type queryStats struct {
	Series   int
	Samples  int64
	EvalTime time.Duration
}

// instantQueryStats runs query at ts with stats=all: how many samples it reads
// (totalQueryableSamples) and how long its evaluation took.
func (c *apiClient) instantQueryStats(ctx context.Context, query string, ts time.Time) (queryStats, error) {
	var data struct {
		ResultType string            `json:"resultType"`
		Result     []json.RawMessage `json:"result"`
		Stats      struct {
			Timings struct {
				EvalTotalTime float64 `json:"evalTotalTime"`
			} `json:"timings"`
			Samples struct {
				TotalQueryableSamples int64 `json:"totalQueryableSamples"`
			} `json:"samples"`
		} `json:"stats"`
	}
	params := url.Values{"query": {query}, "time": {fmt.Sprintf("%.3f", float64(ts.UnixMilli())/1000)}, "stats": {"all"}}
	if err := c.get(ctx, "/api/v1/query", params, &data); err != nil {
		return queryStats{}, err
	}
	return queryStats{
		Series:   len(data.Result),
		Samples:  data.Stats.Samples.TotalQueryableSamples,
		EvalTime: time.Duration(data.Stats.Timings.EvalTotalTime * float64(time.Second)),
	}, nil
}

// scalarQuery runs an instant query expected to return one sample and returns its value (0 for
// an empty result).
func (c *apiClient) scalarQuery(ctx context.Context, query string) (float64, error) {
	var data struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Value [2]any `json:"value"`
		} `json:"result"`
	}
	if err := c.get(ctx, "/api/v1/query", url.Values{"query": {query}}, &data); err != nil {
		return 0, err
	}
	if len(data.Result) == 0 {
		return 0, nil
	}
	s, ok := data.Result[0].Value[1].(string)
	if !ok {
		return 0, fmt.Errorf("query %q: unexpected value %v", query, data.Result[0].Value)
	}
	var v float64
	if _, err := fmt.Sscan(s, &v); err != nil {
		return 0, fmt.Errorf("query %q: value %q: %w", query, s, err)
	}
	return v, nil
}
