package stack

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// defaultWait bounds the WaitFor helpers when the context has no deadline.
const defaultWait = 2 * time.Minute

// Query runs an instant query at the current time. A scalar result comes back as a one-sample
// vector without labels; any other non-vector result is an error.
func (p *Prometheus) Query(ctx context.Context, query string) (model.Vector, error) {
	v, _, err := p.api.Query(ctx, query, time.Now())
	if err != nil {
		return nil, fmt.Errorf("query %q: %w", query, err)
	}
	switch v := v.(type) {
	case model.Vector:
		return v, nil
	case *model.Scalar:
		return model.Vector{&model.Sample{Metric: model.Metric{}, Value: v.Value, Timestamp: v.Timestamp}}, nil
	default:
		return nil, fmt.Errorf("query %q: want a vector, got %s", query, v.Type())
	}
}

// WaitForQuery polls query until it returns at least one sample.
func (p *Prometheus) WaitForQuery(ctx context.Context, query string) (model.Vector, error) {
	var (
		result model.Vector
		last   error
	)
	err := poll(ctx, func(ctx context.Context) bool {
		v, err := p.Query(ctx, query)
		if ctx.Err() != nil {
			// The deadline cut this attempt short: keep what the previous one saw.
			return false
		}
		result, last = v, err
		return last == nil && len(result) > 0
	})
	if err != nil {
		if last == nil {
			last = fmt.Errorf("no samples")
		}
		return nil, fmt.Errorf("wait for %q: %w (last: %w)", query, err, last)
	}
	return result, nil
}

// WaitForTargetsUp waits until every configured target has been scraped successfully.
func (p *Prometheus) WaitForTargetsUp(ctx context.Context) error {
	var down []string
	err := poll(ctx, func(ctx context.Context) bool {
		res, err := p.api.Targets(ctx)
		if err != nil {
			if ctx.Err() == nil {
				down = []string{err.Error()}
			}
			return false
		}
		down = down[:0]
		for _, t := range res.Active {
			if t.Health != promv1.HealthGood {
				down = append(down, fmt.Sprintf("%s %s: %s %s", t.Labels["job"], t.ScrapeURL, t.Health, t.LastError))
			}
		}
		// Until service discovery has run, there is no active target at all: none is down.
		if n := len(res.Active); n < p.targets {
			down = append(down, fmt.Sprintf("%d of %d targets not discovered yet", p.targets-n, p.targets))
		}
		return len(down) == 0
	})
	if err != nil {
		return fmt.Errorf("wait for targets up: %w (not up: %s)", err, strings.Join(down, "; "))
	}
	return nil
}

// WaitForAlert waits until an alert named name whose labels include labels is firing, and
// returns it.
func (p *Prometheus) WaitForAlert(ctx context.Context, name string, labels map[string]string) (promv1.Alert, error) {
	return p.waitForAlert(ctx, name, labels, promv1.AlertStateFiring)
}

// WaitForActiveAlert waits until an alert named name whose labels include labels is pending or
// firing, and returns it: the rule's expression matched, whatever its `for` duration.
func (p *Prometheus) WaitForActiveAlert(ctx context.Context, name string, labels map[string]string) (promv1.Alert, error) {
	return p.waitForAlert(ctx, name, labels, promv1.AlertStatePending, promv1.AlertStateFiring)
}

// waitForAlert waits for a matching alert in one of states.
func (p *Prometheus) waitForAlert(ctx context.Context, name string, labels map[string]string, states ...promv1.AlertState) (promv1.Alert, error) {
	var (
		found promv1.Alert
		seen  []string
	)
	err := poll(ctx, func(ctx context.Context) bool {
		res, err := p.api.Alerts(ctx)
		if err != nil {
			if ctx.Err() == nil {
				seen = []string{err.Error()}
			}
			return false
		}
		seen = seen[:0]
		for _, a := range res.Alerts {
			seen = append(seen, fmt.Sprintf("%s %s", a.Labels, a.State))
			if slices.Contains(states, a.State) && alertMatches(a, name, labels) {
				found = a
				return true
			}
		}
		return false
	})
	if err != nil {
		sort.Strings(seen)
		return promv1.Alert{}, fmt.Errorf("wait for alert %q %v %v: %w (active alerts: %s)", name, labels, states, err, strings.Join(seen, "; "))
	}
	return found, nil
}

func alertMatches(a promv1.Alert, name string, labels map[string]string) bool {
	if string(a.Labels[model.AlertNameLabel]) != name {
		return false
	}
	for k, v := range labels {
		if string(a.Labels[model.LabelName(k)]) != v {
			return false
		}
	}
	return true
}

// poll calls done every 250ms until it reports true or ctx ends (after defaultWait when ctx has
// no deadline).
func poll(ctx context.Context, done func(context.Context) bool) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultWait)
		defer cancel()
	}
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		if done(ctx) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}
