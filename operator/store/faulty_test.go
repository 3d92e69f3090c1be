package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestFaulty(t *testing.T) {
	key := Key{"ns", "b", "b-1"}
	cases := []struct {
		name    string
		setup   func(f *Faulty)
		latency time.Duration
		op      func(ctx context.Context, f *Faulty) error
		wantErr error
	}{
		{name: "passes writes through when no fault is on", op: func(ctx context.Context, f *Faulty) error {
			_, err := f.Put(ctx, key, []byte("x"))
			return err
		}},
		{name: "a failing store fails every write at once", setup: func(f *Faulty) { f.SetFailing(true) },
			op: func(ctx context.Context, f *Faulty) error { _, err := f.Put(ctx, key, []byte("x")); return err }, wantErr: ErrInjected},
		{name: "an outage makes deletes hang until their deadline", setup: func(f *Faulty) { f.SetDeleteOutage(true) },
			op: func(ctx context.Context, f *Faulty) error { return f.Delete(ctx, key) }, wantErr: context.DeadlineExceeded},
		{name: "a slow store is cut by the caller's timeout", latency: time.Hour,
			op: func(ctx context.Context, f *Faulty) error { _, err := f.Put(ctx, key, []byte("x")); return err }, wantErr: context.DeadlineExceeded},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs, err := NewFilesystem(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			f := NewFaulty(fs, c.latency)
			if c.setup != nil {
				c.setup(f)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			err = c.op(ctx, f)
			if c.wantErr == nil && err != nil || c.wantErr != nil && !errors.Is(err, c.wantErr) {
				t.Errorf("error = %v, want %v", err, c.wantErr)
			}
		})
	}
}
