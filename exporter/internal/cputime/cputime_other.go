//go:build !linux

package cputime

import "time"

// Thread returns 0: CPU times are only read on Linux.
func Thread() time.Duration { return 0 }

// Process returns 0: CPU times are only read on Linux.
func Process() time.Duration { return 0 }
