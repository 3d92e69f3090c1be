// Package docscheck tests what a reader copies from the README and docs/: every loopwatch config
// snippet loads through the real loader, the jsonnet snippets evaluate against the mixin, and the
// shell lines that can run here (loopwatch gen, promtool, jsonnet) run, with the configs of the
// same page, in a throwaway directory.
package docscheck

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-jsonnet"
	"sigs.k8s.io/yaml"

	"github.com/loopwatch/loopwatch/gen"
	"github.com/loopwatch/loopwatch/internal/stack"
)

// root is the repository root, from this package's directory.
const root = "../.."

// block is one fenced code block of a page.
type block struct {
	page, lang, text string
	line             int
}

// pages are the Markdown files a reader copies from: the README and every page of docs/,
// runbooks included.
func pages(t *testing.T) []string {
	t.Helper()
	out := []string{filepath.Join(root, "README.md")}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			out = append(out, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// blocks returns the fenced code blocks of every page.
func blocks(t *testing.T) []block {
	t.Helper()
	var out []block
	for _, page := range pages(t) {
		f, err := os.Open(page)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		var cur *block
		n := 0
		for sc.Scan() {
			n++
			line := sc.Text()
			trimmed := strings.TrimSpace(line)
			switch {
			case cur == nil && strings.HasPrefix(trimmed, "```"):
				cur = &block{page: strings.TrimPrefix(page, root+"/"), lang: strings.TrimPrefix(trimmed, "```"), line: n}
			case cur != nil && trimmed == "```":
				out = append(out, *cur)
				cur = nil
			case cur != nil:
				cur.text += line + "\n"
			}
		}
		f.Close()
		if cur != nil {
			t.Errorf("%s:%d: code block never closed", cur.page, cur.line)
		}
	}
	return out
}

// configKeys are the top-level keys of a loopwatch config.
func configKeys() []string {
	var keys []string
	typ := reflect.TypeFor[gen.Config]()
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	return keys
}

// isConfig reports whether a YAML block is a loopwatch config: one of its top-level keys is a
// config key. A misspelt key beside a right one makes it a config that fails to load, as it
// should.
func isConfig(t *testing.T, b block) bool {
	var doc map[string]any
	if yaml.Unmarshal([]byte(b.text), &doc) != nil {
		return false
	}
	keys := configKeys()
	for k := range doc {
		if slices.Contains(keys, k) {
			return true
		}
	}
	return false
}

// TestConfigExamplesLoad: every config snippet of the README and docs/ loads through gen.Parse
// (unknown fields and invalid values are errors there), and the README has at least one.
func TestConfigExamplesLoad(t *testing.T) {
	found := map[string]int{}
	for _, b := range blocks(t) {
		if b.lang != "yaml" || !isConfig(t, b) {
			continue
		}
		found[b.page]++
		if _, err := gen.Parse(b.page, []byte(b.text)); err != nil {
			t.Errorf("%s:%d: the config example does not load:\n%v", b.page, b.line, err)
		}
	}
	for _, page := range []string{"README.md", "docs/generate.md"} {
		if found[page] == 0 {
			t.Errorf("%s has no config example: the check found nothing to load", page)
		}
	}
}

// TestJsonnetExamplesEvaluate: every jsonnet snippet evaluates against this repository's mixin,
// vendored as 'loopwatch/' the way the docs say.
func TestJsonnetExamplesEvaluate(t *testing.T) {
	vendor := t.TempDir()
	if err := os.Symlink(mustAbs(t, filepath.Join(root, "jsonnet")), filepath.Join(vendor, "loopwatch")); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, b := range blocks(t) {
		if b.lang != "jsonnet" {
			continue
		}
		n++
		vm := jsonnet.MakeVM()
		vm.Importer(&jsonnet.FileImporter{JPaths: []string{vendor}})
		if _, err := vm.EvaluateAnonymousSnippet(b.page, b.text); err != nil {
			t.Errorf("%s:%d: the jsonnet example does not evaluate: %v", b.page, b.line, err)
		}
	}
	if n == 0 {
		t.Error("no jsonnet example found: the check found nothing to evaluate")
	}
}

// runnable are the commands of shell snippets that run here, with what they need from bin/.
var runnable = map[string]string{"loopwatch": "loopwatch", "bin/loopwatch": "loopwatch", "promtool": "promtool", "bin/promtool": "promtool", "bin/jsonnet": "jsonnet"}

// runsHere reports whether a shell line runs without a cluster, a Prometheus or the reader's
// files: loopwatch gen, promtool, jsonnet, and cd between them. loopwatch's other commands
// (diagnose, audit analyze, the exporter) read what only the reader has.
func runsHere(line string) bool {
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return false
	}
	switch tool := runnable[fields[0]]; {
	case fields[0] == "cd":
		return strings.Contains(line, "&&")
	case tool == "loopwatch":
		return len(fields) > 1 && fields[1] == "gen"
	default:
		return tool != ""
	}
}

// TestShellExamplesRun runs, per page, the lines of its shell snippets that run here (loopwatch
// gen, promtool, jsonnet, and cd between them), in a throwaway directory holding the page's last
// config example as loopwatch.yaml and the repository's jsonnet/ and testrules/. Lines that need a
// cluster or a network (kubectl, diagnose, the exporter) are not run.
func TestShellExamplesRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs bin/loopwatch and bin/promtool")
	}
	bin, err := stack.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"loopwatch", "promtool", "jsonnet"} {
		if _, err := stack.LookPath(name); err != nil {
			t.Fatal(err)
		}
	}
	byPage := map[string][]block{}
	for _, b := range blocks(t) {
		byPage[b.page] = append(byPage[b.page], b)
	}
	ran := 0
	for page, bs := range byPage {
		var config string
		var lines []string
		for _, b := range bs {
			switch {
			case b.lang == "yaml" && isConfig(t, b):
				config = b.text
			case b.lang == "sh":
				for line := range strings.Lines(b.text) {
					line, _, _ = strings.Cut(line, "#")
					line = strings.TrimSpace(line)
					if runsHere(line) {
						lines = append(lines, line)
					}
				}
			}
		}
		if len(lines) == 0 {
			continue
		}
		t.Run(page, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "loopwatch.yaml"), []byte(config), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(mustAbs(t, filepath.Join(root, "jsonnet")), filepath.Join(dir, "jsonnet")); err != nil {
				t.Fatal(err)
			}
			for _, line := range lines {
				ran++
				// bin/ of the repository stands for the reader's bin/ and PATH.
				cmd := exec.Command("bash", "-euo", "pipefail", "-c", line)
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
				if err := os.Symlink(bin, filepath.Join(dir, "bin")); err != nil && !os.IsExist(err) {
					t.Fatal(err)
				}
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Errorf("%s: `%s` failed: %v\n%s", page, line, err, out)
				}
			}
		})
	}
	if ran == 0 {
		t.Error("no runnable shell example found")
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// linkRE matches a Markdown link's target: [text](target).
var linkRE = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestRelativeLinksResolve: every relative link of the README and docs/ names a file or folder
// of the repository, so a page moved or renamed cannot leave a reader at a dead link.
func TestRelativeLinksResolve(t *testing.T) {
	n := 0
	for _, page := range pages(t) {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
				target, _, _ := strings.Cut(m[1], "#")
				if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				n++
				if _, err := os.Stat(filepath.Join(filepath.Dir(page), target)); err != nil {
					t.Errorf("%s:%d: link %s: no such file", strings.TrimPrefix(page, root+"/"), i+1, m[1])
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no relative link found: the page walk is broken")
	}
}

// TestTestingPageMapsEveryAlert: docs/testing.md's table of where each alert fires names every
// declared alert, and every test it names exists, so the table cannot silently fall behind a new
// alert or a renamed test.
func TestTestingPageMapsEveryAlert(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "docs", "testing.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "## Where each alert fires")
	if !ok {
		t.Fatal("docs/testing.md has no section \"Where each alert fires\"")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	for _, a := range gen.Alerts() {
		if !strings.Contains(section, "`"+a.FullName()+"`") {
			t.Errorf("docs/testing.md does not say where %s fires", a.FullName())
		}
	}
	var tests []string
	for _, m := range regexp.MustCompile("`(Test[A-Za-z0-9_]+)`").FindAllStringSubmatch(section, -1) {
		tests = append(tests, m[1])
	}
	if len(tests) == 0 {
		t.Fatal("the section names no test")
	}
	declared := map[string]bool{}
	decl := regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]+)\(`)
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "tools" || d.Name() == "bin" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, "_test.go") {
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range decl.FindAllStringSubmatch(string(src), -1) {
				declared[m[1]] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range tests {
		if !declared[name] {
			t.Errorf("docs/testing.md names %s, which no test file declares", name)
		}
	}
}
