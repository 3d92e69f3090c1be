package diagnose

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// Errors a diagnosis can end with; test them with errors.Is.
var (
	// ErrUnreachable: nothing answers at the Prometheus URL (connection refused, unknown host,
	// no answer within the timeout).
	ErrUnreachable = errors.New("prometheus is unreachable")
	// ErrNotPrometheus: something answers, but not the Prometheus HTTP API.
	ErrNotPrometheus = errors.New("not a prometheus API")
	// ErrResponseTooLarge: a query's answer exceeds Options.MaxResponseBytes.
	ErrResponseTooLarge = errors.New("prometheus response too large")
	// ErrNoControllers: Prometheus has no controller-runtime metrics for the configured selector
	// in the window.
	ErrNoControllers = errors.New("no controller metrics")
	// ErrUnknownController: Options.Controller names no controller found in the window.
	ErrUnknownController = errors.New("unknown controller")
)

// promClient is a small client of the Prometheus HTTP API (/api/v1/query and query_range),
// bounded in time (a timeout per request) and bytes (a cap on every response body). It speaks
// plain HTTP so that each bound is visible here; the answers decode into prometheus/common's
// model types.
type promClient struct {
	base     *url.URL
	http     *http.Client
	maxBytes int64
}

func newPromClient(rawURL string, timeout time.Duration, maxBytes int64) (*promClient, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("prometheus URL %q: want an absolute http or https URL", rawURL)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	return &promClient{base: u, http: &http.Client{Timeout: timeout}, maxBytes: maxBytes}, nil
}

// apiResponse is the envelope of every Prometheus API answer.
type apiResponse struct {
	Status    string          `json:"status"`
	Data      json.RawMessage `json:"data"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
	Warnings  []string        `json:"warnings"`
}

type queryData struct {
	ResultType model.ValueType `json:"resultType"`
	Result     json.RawMessage `json:"result"`
}

// query evaluates expr at t and returns the vector it yields (a scalar becomes one sample
// without labels).
func (c *promClient) query(ctx context.Context, expr string, t time.Time) (model.Vector, []string, error) {
	form := url.Values{"query": {expr}, "time": {formatTime(t)}}
	data, warnings, err := c.post(ctx, "/api/v1/query", form)
	if err != nil {
		return nil, nil, queryError(expr, err)
	}
	switch data.ResultType {
	case model.ValVector:
		var v model.Vector
		if err := json.Unmarshal(data.Result, &v); err != nil {
			return nil, nil, fmt.Errorf("query %s: decode vector: %w", oneLine(expr), err)
		}
		return v, warnings, nil
	case model.ValScalar:
		var s model.Scalar
		if err := json.Unmarshal(data.Result, &s); err != nil {
			return nil, nil, fmt.Errorf("query %s: decode scalar: %w", oneLine(expr), err)
		}
		return model.Vector{{Metric: model.Metric{}, Value: s.Value, Timestamp: s.Timestamp}}, warnings, nil
	default:
		return nil, nil, fmt.Errorf("query %s: want a vector, got %s", oneLine(expr), data.ResultType)
	}
}

// queryRange evaluates expr at every step from start to end.
func (c *promClient) queryRange(ctx context.Context, expr string, start, end time.Time, step time.Duration) (model.Matrix, []string, error) {
	form := url.Values{
		"query": {expr},
		"start": {formatTime(start)},
		"end":   {formatTime(end)},
		"step":  {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)},
	}
	data, warnings, err := c.post(ctx, "/api/v1/query_range", form)
	if err != nil {
		return nil, nil, queryError(expr, err)
	}
	if data.ResultType != model.ValMatrix {
		return nil, nil, fmt.Errorf("query %s: want a matrix, got %s", oneLine(expr), data.ResultType)
	}
	var m model.Matrix
	if err := json.Unmarshal(data.Result, &m); err != nil {
		return nil, nil, fmt.Errorf("query %s: decode matrix: %w", oneLine(expr), err)
	}
	return m, warnings, nil
}

// queryError names the query a failure is about, unless the failure is not about the query (no
// Prometheus at that address).
func queryError(expr string, err error) error {
	if errors.Is(err, ErrUnreachable) || errors.Is(err, ErrNotPrometheus) {
		return err
	}
	return fmt.Errorf("query %s: %w", oneLine(expr), err)
}

// post sends one form-encoded query (POST keeps long expressions out of the URL) and returns
// its data.
func (c *promClient) post(ctx context.Context, path string, form url.Values) (queryData, []string, error) {
	raw, warnings, err := c.do(ctx, http.MethodPost, path, form)
	if err != nil {
		return queryData{}, nil, err
	}
	var d queryData
	if err := json.Unmarshal(raw, &d); err != nil {
		return queryData{}, nil, fmt.Errorf("decode data: %w", err)
	}
	return d, warnings, nil
}

// get sends one GET request with params and returns its raw data.
func (c *promClient) get(ctx context.Context, path string, params url.Values) (json.RawMessage, []string, error) {
	return c.do(ctx, http.MethodGet, path, params)
}

// do sends one API request, reads at most maxBytes of the answer and returns its data.
func (c *promClient) do(ctx context.Context, method, path string, params url.Values) (json.RawMessage, []string, error) {
	u := *c.base
	u.Path += path
	var body io.Reader
	if method == http.MethodGet {
		u.RawQuery = params.Encode()
	} else {
		body = strings.NewReader(params.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, nil, c.transportError(ctx, err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(io.LimitReader(resp.Body, c.maxBytes+1))
	if err != nil {
		return nil, nil, c.transportError(ctx, err)
	}
	if int64(len(b)) > c.maxBytes {
		return nil, nil, fmt.Errorf("%w: more than %d bytes (narrow it with --controller or the config's selectors)", ErrResponseTooLarge, c.maxBytes)
	}
	var r apiResponse
	if err := json.Unmarshal(b, &r); err != nil || r.Status == "" {
		return nil, nil, fmt.Errorf("%w: %s answered %s with %s", ErrNotPrometheus, c.base, resp.Status, snippet(b))
	}
	if r.Status != "success" {
		return nil, nil, fmt.Errorf("prometheus refused it: %s: %s (%s)", r.ErrorType, r.Error, resp.Status)
	}
	return r.Data, r.Warnings, nil
}

// transportError says whether Prometheus could not be reached, or the caller gave up.
func (c *promClient) transportError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var netErr net.Error
	var opErr *net.OpError
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &dnsErr), errors.As(err, &opErr) && opErr.Op == "dial":
		return fmt.Errorf("%w at %s: %w", ErrUnreachable, c.base, err)
	case errors.As(err, &netErr) && netErr.Timeout():
		return fmt.Errorf("%w at %s: no answer within %s: %w", ErrUnreachable, c.base, c.http.Timeout, err)
	}
	return fmt.Errorf("request to %s: %w", c.base, err)
}

func formatTime(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64)
}

// oneLine shortens an expression for an error message.
func oneLine(expr string) string {
	s := strings.Join(strings.Fields(expr), " ")
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return strconv.Quote(s)
}

// snippet quotes the start of a body that is not an API answer.
func snippet(b []byte) string {
	if len(b) > 120 {
		b = b[:120]
	}
	return strconv.Quote(string(b))
}
