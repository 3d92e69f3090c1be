//go:build linux

// Package cputime reads the CPU time of the calling OS thread and of the whole process, so that
// benchmarks on a shared, busy machine can report CPU cost per operation next to wall time (which
// includes waiting for a core). The process figure includes the garbage collector's workers,
// which run on other threads: for code that allocates, the thread figure hides that cost.
package cputime

import (
	"syscall"
	"time"
)

// rusageThread is RUSAGE_THREAD (Linux), which the syscall package does not name.
const rusageThread = 1

// Thread returns the user+system CPU time consumed by the calling thread; lock the goroutine to
// its thread (runtime.LockOSThread) around a measurement.
func Thread() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Process returns the user+system CPU time consumed by all threads of the process.
func Process() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
