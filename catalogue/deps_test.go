package catalogue

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/loopwatch/loopwatch"

// deps returns the packages pkg links (go list -deps), each with whether it is in the standard
// library.
func deps(t *testing.T, pkg string) map[string]bool {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{.Standard}}", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	m := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, std, _ := strings.Cut(line, " ")
		m[path] = std == "true"
	}
	return m
}

// The catalogue is the leaf both producers and consumers import: it must not pull either side,
// nor client_golang, into the other.
func TestCatalogueImportsOnlyTheStandardLibrary(t *testing.T) {
	for path, std := range deps(t, module+"/catalogue") {
		if !std && path != module+"/catalogue" {
			t.Errorf("the catalogue links %s", path)
		}
	}
}

func TestGeneratorLinksNeitherExporterNorInstrument(t *testing.T) {
	d := deps(t, module+"/gen")
	if _, ok := d[module+"/catalogue"]; !ok {
		t.Errorf("gen does not link the catalogue: it checks expressions against it")
	}
	for path := range d {
		for _, producer := range []string{module + "/exporter", module + "/instrument"} {
			if path == producer || strings.HasPrefix(path, producer+"/") {
				t.Errorf("gen links %s", path)
			}
		}
	}
}
