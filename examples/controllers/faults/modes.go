// Package faults breaks the example controllers on purpose, from the outside, so that
// loopwatch's rules can be shown to catch each failure on controllers that loopwatch did not
// write and does not instrument: reconciler decorators (latency, errors, N+1 reads, a timestamp
// annotation, a call that never returns) and a client wrapper (a condition rewritten on every pass). The controllers in
// packages scheduler and conditions know nothing of it.
package faults

import "time"

// Modes switches the faults on. Every field is off by default.
type Modes struct {
	// HotLoop makes every reconcile write something that changes nothing a user asked for and
	// wakes the controller again: the scheduler stamps the time on its CronJob, the conditions
	// controller rewrites its Ready condition with the time of the pass (lastTransitionTime and
	// a "checked at" message).
	HotLoop bool
	// Slow makes every reconcile wait this long first, as a call to a slow external service does.
	Slow time.Duration
	// NPlusOne lists the controller's objects from the API server and GETs each one, uncached,
	// before every reconcile: API calls per reconcile grow with the objects in the namespace.
	NPlusOne bool
	// Errors makes every reconcile fail before it does anything, as it does when a service it
	// depends on is down.
	Errors bool
	// Hang names an object whose reconciles never return (until the process stops), as a call
	// without a timeout to a service that never answers: the worker that picks it up is held
	// for good, and with one worker the whole controller stops.
	Hang string
}

// nPlusOneFanout caps the GETs of NPlusOne.
const nPlusOneFanout = 50

// HotLoopAnnotation carries the time of the last reconcile in the scheduler's hot loop.
const HotLoopAnnotation = "examples.loopwatch.dev/last-reconciled"
