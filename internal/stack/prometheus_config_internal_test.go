package stack

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestPrometheusConfigHistogramIngestion: each way of storing histograms becomes its scrape
// settings, and a job cannot mix two of them, nor relabeling with none (its targets share one
// scrape configuration).
func TestPrometheusConfigHistogramIngestion(t *testing.T) {
	render := func(targets ...ScrapeTarget) (map[string]map[string]any, error) {
		out, err := prometheusConfig(PrometheusOptions{Targets: targets})
		if err != nil {
			return nil, err
		}
		var c struct {
			ScrapeConfigs []map[string]any `json:"scrape_configs"`
		}
		if err := yaml.Unmarshal(out, &c); err != nil {
			t.Fatal(err)
		}
		jobs := map[string]map[string]any{}
		for _, sc := range c.ScrapeConfigs {
			jobs[sc["job_name"].(string)] = sc
		}
		return jobs, nil
	}
	jobs, err := render(
		ScrapeTarget{Job: "classic", Addresses: []string{"a:1"}},
		ScrapeTarget{Job: "native", Addresses: []string{"a:1"}, Histograms: HistogramsNativeOnly},
		ScrapeTarget{Job: "nhcb", Addresses: []string{"a:1"}, Histograms: HistogramsNHCBOnly},
	)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]any{
		"classic": {"always_scrape_classic_histograms": true, "scrape_native_histograms": nil, "convert_classic_histograms_to_nhcb": nil},
		"native":  {"always_scrape_classic_histograms": false, "scrape_native_histograms": true, "convert_classic_histograms_to_nhcb": nil},
		"nhcb":    {"always_scrape_classic_histograms": false, "scrape_native_histograms": nil, "convert_classic_histograms_to_nhcb": true},
	}
	for job, settings := range want {
		for k, v := range settings {
			if got := jobs[job][k]; got != v {
				t.Errorf("job %s: %s = %v, want %v", job, k, got, v)
			}
		}
	}

	for name, targets := range map[string][]ScrapeTarget{
		"native first": {
			{Job: "j", Addresses: []string{"a:1"}, Histograms: HistogramsNativeOnly},
			{Job: "j", Addresses: []string{"b:1"}},
		},
		"native second": {
			{Job: "j", Addresses: []string{"a:1"}},
			{Job: "j", Addresses: []string{"b:1"}, Histograms: HistogramsNHCBOnly},
		},
		"unknown": {{Job: "j", Addresses: []string{"a:1"}, Histograms: "sometimes"}},
		"relabeling first": {
			{Job: "j", Addresses: []string{"a:1"}, MetricRelabelConfigs: []map[string]any{{"action": "drop"}}},
			{Job: "j", Addresses: []string{"b:1"}},
		},
		"relabeling second": {
			{Job: "j", Addresses: []string{"a:1"}},
			{Job: "j", Addresses: []string{"b:1"}, MetricRelabelConfigs: []map[string]any{{"action": "drop"}}},
		},
	} {
		if _, err := render(targets...); err == nil || !strings.Contains(err.Error(), `scrape target "j"`) {
			t.Errorf("%s: error %v, want one naming the job", name, err)
		}
	}
}
