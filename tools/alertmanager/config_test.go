package tools

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/alertmanager/config"
	"go.yaml.in/yaml/v2"
)

// The Alertmanager configuration loopwatch generates is checked by Alertmanager's own loader, of
// the version this module pins: the example as it is, and the inhibit fragment merged into a
// configuration of its own, as docs/alertmanager.md tells a user to merge it.

const generated = "../../alertmanager"

func TestExampleConfigurationLoads(t *testing.T) {
	cfg, err := config.LoadFile(filepath.Join(generated, "alertmanager.example.yaml"))
	if err != nil {
		t.Fatalf("alertmanager.example.yaml: %v", err)
	}
	if len(cfg.InhibitRules) == 0 {
		t.Fatal("the example has no inhibit rules")
	}
	if len(cfg.Route.Routes) != 1 || len(cfg.Route.Routes[0].GroupBy) == 0 {
		t.Fatalf("the example routes loopwatch's alerts by no grouping: %+v", cfg.Route.Routes)
	}
}

func TestInhibitFragmentMergesIntoAConfiguration(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(generated, "loopwatch.inhibit.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var fragment struct {
		InhibitRules []any `yaml:"inhibit_rules"`
	}
	if err := yaml.UnmarshalStrict(b, &fragment); err != nil {
		t.Fatalf("loopwatch.inhibit.yaml holds more than inhibit rules: %v", err)
	}
	own := map[string]any{
		"route":         map[string]any{"receiver": "team"},
		"receivers":     []any{map[string]any{"name": "team"}},
		"inhibit_rules": append([]any{map[string]any{"source_matchers": []any{`severity="critical"`}, "target_matchers": []any{`severity="warning"`}, "equal": []any{"alertname"}}}, fragment.InhibitRules...),
	}
	merged, err := yaml.Marshal(own)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(string(merged))
	if err != nil {
		t.Fatalf("merged configuration: %v", err)
	}
	if got, want := len(cfg.InhibitRules), len(fragment.InhibitRules)+1; got != want {
		t.Fatalf("merged configuration has %d inhibit rules, want %d", got, want)
	}
}
