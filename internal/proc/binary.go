package proc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// Binary is a main package of this module built once, on first use, into a temporary directory:
// the tests that run loopwatch's own commands as processes share one build per test process.
type Binary struct {
	// Package is the import path of the command, e.g. github.com/loopwatch/loopwatch/cmd/loopwatch.
	Package string

	once sync.Once
	path string
	err  error
}

// Path builds the command the first time and returns the executable's path.
func (b *Binary) Path() (string, error) {
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "loopwatch-bin-")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, filepath.Base(b.Package))
		if out, err := exec.Command("go", "build", "-o", b.path, b.Package).CombinedOutput(); err != nil {
			b.err = fmt.Errorf("build %s: %w\n%s", b.Package, err, out)
		}
	})
	return b.path, b.err
}

// Remove deletes what Path built; a TestMain calls it after the tests.
func (b *Binary) Remove() {
	if b.path != "" {
		_ = os.RemoveAll(filepath.Dir(b.path))
	}
}
