package main

import (
	"context"
	"testing"
	"time"
)

// TestDemo runs `make demo`'s scenario, so the README's first command is proven on every run: a
// healthy operator stays silent, the hot loop and the write fight fire their alerts, and the
// audit log post-mortem runs.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real components for minutes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	d, err := newDemo()
	if err != nil {
		t.Fatal(err)
	}
	err = d.run(ctx)
	d.close(err != nil)
	if err != nil {
		t.Fatal(err)
	}
}
