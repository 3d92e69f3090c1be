package gen

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Config fixtures: every *.good.yaml loads and builds; every *.bad.yaml fails with exactly the
// errors listed in its "# error:" comment lines (each one a prefix of one reported line).
func TestConfigFixtures(t *testing.T) {
	files, err := filepath.Glob("testdata/config/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no config fixtures: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			cfg, err := Load(f)
			if strings.HasSuffix(f, ".good.yaml") {
				if err != nil {
					t.Fatalf("good config rejected: %v", err)
				}
				if _, err := Build(cfg); err != nil {
					t.Fatalf("build: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("bad config accepted")
			}
			b, _ := os.ReadFile(f)
			var want []string
			for _, line := range strings.Split(string(b), "\n") {
				if e, ok := strings.CutPrefix(line, "# error: "); ok {
					want = append(want, e)
				}
			}
			got := strings.Split(err.Error(), "\n")[1:] // first line names the file
			if len(got) != len(want) {
				t.Errorf("got %d errors, want %d:\n%s", len(got), len(want), err)
			}
			for _, w := range want {
				found := false
				for _, g := range got {
					if strings.HasPrefix(g, w) {
						found = true
					}
				}
				if !found {
					t.Errorf("missing error %q in:\n%s", w, err)
				}
			}
		})
	}
}

func TestEveryDefaultIsValid(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
}

func TestConfigOverridesOnlyWhatItNames(t *testing.T) {
	cfg, err := Parse("inline", []byte("alerts:\n  queueBacklog: {depth: 7}\n"))
	if err != nil {
		t.Fatal(err)
	}
	def := Default()
	got, want := cfg.Alerts[QueueBacklog.Key], def.Alerts[QueueBacklog.Key]
	if got.Values["depth"] != 7 {
		t.Errorf("depth = %v, want 7", got.Values["depth"])
	}
	if got.For != want.For || got.Severity != want.Severity {
		t.Errorf("unnamed fields of queueBacklog changed: %+v", got)
	}
	if !reflect.DeepEqual(cfg.Alerts[QueueWaitHigh.Key], def.Alerts[QueueWaitHigh.Key]) {
		t.Errorf("queueWait changed: %+v", cfg.Alerts[QueueWaitHigh.Key])
	}
	if def.Alerts[QueueBacklog.Key].Values["depth"] != QueueBacklog.Params[0].Default {
		t.Error("parsing a config changed the defaults")
	}
	if cfg.Selectors != def.Selectors {
		t.Errorf("selectors changed: %+v", cfg.Selectors)
	}
}
