// Package browser drives a real headless Chromium (Debian's chromium package) for the tests of
// loopwatch's HTML reports: it loads a page from file://, as a reader opens a report, and returns
// the DOM after the page's script ran, a screenshot or a PDF print of it. It starts a fresh
// browser with an empty profile for each call and no network: the flags keep Chromium from
// reaching out at all, so a page that needs the network shows it.
package browser

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// Env names the environment variable that points at the Chromium binary (default: chromium or
// chromium-browser on $PATH, as Debian's package installs it).
const Env = "LOOPWATCH_CHROMIUM"

// Chromium is a Chromium binary.
type Chromium struct {
	path string
	// Timeout bounds each run of the browser.
	Timeout time.Duration
}

// ErrNotFound is returned when no Chromium binary is found.
var ErrNotFound = errors.New("chromium not found (Debian: apt-get install -y chromium; or set " + Env + ")")

// Find looks for the Chromium binary.
func Find() (*Chromium, error) {
	if p := os.Getenv(Env); p != "" {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("%s=%s: %w", Env, p, err)
		}
		return &Chromium{path: p, Timeout: 2 * time.Minute}, nil
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return &Chromium{path: p, Timeout: 2 * time.Minute}, nil
		}
	}
	return nil, ErrNotFound
}

// ForTest returns the Chromium binary of a test. Under -short (make unit, which starts no real
// component) the test is skipped, saying so; otherwise Chromium must be there: the full run (make
// test, CI) checks the pages in a real browser.
func ForTest(t testing.TB) *Chromium {
	t.Helper()
	if testing.Short() {
		t.Skip("skipping the browser check in -short mode: make test runs it in Chromium")
	}
	c, err := Find()
	if err != nil {
		t.Fatalf("the HTML reports are checked in a real browser (apt-get install chromium): %v", err)
	}
	return c
}

// flags are what every run passes: headless, no sandbox (tests run as root in CI), and nothing
// that reaches the network (updates, sync, metrics, QUIC).
var flags = []string{
	"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
	"--disable-background-networking", "--disable-component-update", "--disable-sync",
	"--disable-default-apps", "--disable-extensions", "--hide-scrollbars", "--mute-audio",
	"--force-device-scale-factor=1",
}

// run starts the browser on page with extra flags and returns what it printed on stdout.
func (c *Chromium) run(ctx context.Context, page string, extra ...string) ([]byte, error) {
	profile, err := os.MkdirTemp("", "loopwatch-chromium-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(profile)
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	u, err := FileURL(page)
	if err != nil {
		return nil, err
	}
	args := append(append(append([]string{}, flags...), "--user-data-dir="+profile), extra...)
	cmd := exec.CommandContext(ctx, c.path, append(args, u)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("chromium on %s: %w: %s", u, err, tail(stderr.Bytes()))
	}
	return stdout.Bytes(), nil
}

// FileURL is the file:// URL of a local file, with an optional #fragment kept as it is.
func FileURL(page string) (string, error) {
	path, frag := page, ""
	if i := bytes.IndexByte([]byte(page), '#'); i >= 0 {
		path, frag = page[:i], page[i:]
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	return (&url.URL{Scheme: "file", Path: abs}).String() + frag, nil
}

func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// Capture says what else Load keeps of the page besides its DOM.
type Capture struct {
	// Screenshot, when set, is where a PNG of the page in a window of Width × Height pixels is
	// written.
	Screenshot    string
	Width, Height int
	// PDF, when set, is where the page printed on paper (A4/Letter, as Chromium prints) is
	// written.
	PDF string
}

// Load loads page (a file, with an optional #fragment) in one run of the browser and returns
// its DOM serialised after its scripts ran, writing the screenshot and PDF that capture asks for.
func (c *Chromium) Load(ctx context.Context, page string, capture Capture) (string, error) {
	extra := []string{"--dump-dom"}
	var files []string
	if capture.Screenshot != "" {
		abs, err := filepath.Abs(capture.Screenshot)
		if err != nil {
			return "", err
		}
		files = append(files, abs)
		extra = append(extra, "--screenshot="+abs, "--window-size="+strconv.Itoa(capture.Width)+","+strconv.Itoa(capture.Height))
	}
	if capture.PDF != "" {
		abs, err := filepath.Abs(capture.PDF)
		if err != nil {
			return "", err
		}
		files = append(files, abs)
		extra = append(extra, "--print-to-pdf="+abs, "--no-pdf-header-footer")
	}
	out, err := c.run(ctx, page, extra...)
	if err != nil {
		return "", err
	}
	if !bytes.Contains(out, []byte("<html")) {
		return "", fmt.Errorf("chromium printed no document for %s: %q", page, tail(out))
	}
	for _, f := range files {
		if fi, err := os.Stat(f); err != nil || fi.Size() == 0 {
			return "", fmt.Errorf("chromium wrote no %s of %s: %v", filepath.Ext(f), page, err)
		}
	}
	return string(out), nil
}
