package results

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReplace(t *testing.T) {
	tab := Table{Name: "demo", Page: "docs/x.md", Command: "make demo-bench"}
	for _, tc := range []struct {
		name, page, body, want string
		err                    error
	}{
		{
			name: "replaces the block and keeps the text around it",
			page: "intro\n<!-- results:demo: written by `old command`, do not edit -->\nold\n<!-- /results:demo -->\noutro\n",
			body: "| a |\n|---|\n| 1 |\n",
			want: "intro\n<!-- results:demo: written by `make demo-bench`, do not edit -->\n\n| a |\n|---|\n| 1 |\n\n<!-- /results:demo -->\noutro\n",
		},
		{
			name: "an empty block",
			page: "<!-- results:demo: x -->\n<!-- /results:demo -->\n",
			body: "new",
			want: "<!-- results:demo: written by `make demo-bench`, do not edit -->\n\nnew\n\n<!-- /results:demo -->\n",
		},
		{name: "no markers", page: "text\n", err: ErrNoMarkers},
		{name: "two opening markers", page: "<!-- results:demo: a -->\n<!-- results:demo: b -->\n<!-- /results:demo -->\n", err: ErrNoMarkers},
		{name: "the end before the start", page: "<!-- /results:demo -->\n<!-- results:demo: a -->\n", err: ErrNoMarkers},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tab.Replace([]byte(tc.page), tc.body)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if tc.err == nil && string(got) != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestWriteThenLoadIsIdempotent(t *testing.T) {
	root := t.TempDir()
	tab := Table{Name: "demo", Page: "docs/x.md", Command: "make demo-bench"}
	if err := os.MkdirAll(filepath.Join(root, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	page := "# X\n\n<!-- results:demo: -->\n<!-- /results:demo -->\n"
	if err := os.WriteFile(filepath.Join(root, tab.Page), []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	type row struct{ A, B int }
	if err := tab.Write(root, []row{{1, 2}}, "| 1 | 2 |"); err != nil {
		t.Fatal(err)
	}
	first, _ := os.ReadFile(filepath.Join(root, tab.Page))
	var rows []row
	if err := tab.Load(root, &rows); err != nil || len(rows) != 1 || rows[0] != (row{1, 2}) {
		t.Fatalf("Load = %v, %v", rows, err)
	}
	if err := tab.WriteBody(root, "| 1 | 2 |"); err != nil {
		t.Fatal(err)
	}
	second, _ := os.ReadFile(filepath.Join(root, tab.Page))
	if string(first) != string(second) || !strings.Contains(string(first), "| 1 | 2 |") {
		t.Errorf("a second write changed the page:\n%s\n---\n%s", first, second)
	}
}

func TestParseCPUModel(t *testing.T) {
	info := "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: Oxide Virtual Turin-like Processor\nflags\t\t: fpu\n\nprocessor\t: 1\nmodel name\t: other\n"
	if got := parseCPUModel(info); got != "Oxide Virtual Turin-like Processor" {
		t.Errorf("parseCPUModel = %q", got)
	}
	if got := parseCPUModel("processor\t: 0\n"); got != "" {
		t.Errorf("parseCPUModel without a model name = %q, want empty", got)
	}
}
