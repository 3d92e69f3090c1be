//go:build !linux

package cputime

import "time"

// Thread returns 0: per-thread CPU time is only read on Linux.
func Thread() time.Duration { return 0 }
