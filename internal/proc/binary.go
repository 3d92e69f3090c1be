package proc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// Binary is a main package built once, on first use, into a temporary directory: the tests that
// run loopwatch's own commands (or a fixture module's) as processes share one build per test
// process.
type Binary struct {
	// Package is the import path of the command, e.g. github.com/loopwatch/loopwatch/cmd/loopwatch.
	Package string
	// ModuleDir, when set, is the directory of the module of its own that holds Package (a
	// command pinned to other versions than this module's), built with its own go.mod.
	ModuleDir string

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
		args := []string{"build", "-o", b.path, b.Package}
		if b.ModuleDir != "" {
			mod, err := filepath.Abs(b.ModuleDir)
			if err != nil {
				b.err = err
				return
			}
			args = append([]string{"-C", mod}, args...)
		}
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
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
