package gen

import (
	"context"
	"math"
	"net/url"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/template"
)

// The expected annotations of generated tests are rendered with alertTemplateFuncs; they must
// render exactly as Prometheus' own template functions do, or the tests would expect texts
// Prometheus never writes.
func TestTemplateFuncsMatchPrometheus(t *testing.T) {
	values := []float64{0, 1, 0.25, 0.0123456, 1e-7, 9653, 12345678, 1.5e12, -42.5, 600, 3723, 86400 * 3, math.Inf(1), math.NaN()}
	texts := []string{
		"{{ $value | humanize }}",
		"{{ $value | humanizePercentage }}",
		"{{ $value | humanizeDuration }}",
		`{{ $value | printf "%.2f" }}`,
		"{{ $value }}",
		"{{ if $labels.controller }}c={{ $labels.controller }}{{ else }}none{{ end }} {{ $labels.missing }}",
	}
	u, _ := url.Parse("http://localhost")
	m := &Model{}
	for _, v := range values {
		for _, text := range texts {
			for _, labels := range []Labels{{"controller": "backup"}, {}} {
				want, err := template.NewTemplateExpander(context.Background(),
					"{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$externalURL := .ExternalURL}}{{$value := .Value}}"+text,
					"test", template.AlertTemplateData(labels, nil, "", promql.Sample{F: v}), model.Time(time.Now().UnixMilli()),
					nil, u, nil).Expand()
				if err != nil {
					t.Fatalf("prometheus: %q with %v: %v", text, v, err)
				}
				got, err := m.expandText(text, labels, v)
				if err != nil {
					t.Fatalf("%q with %v: %v", text, v, err)
				}
				if got != want {
					t.Errorf("%q with %v, labels %v: got %q, Prometheus writes %q", text, v, labels, got, want)
				}
			}
		}
	}
}
