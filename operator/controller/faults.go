package controller

import "time"

// Faults switches on the bugs the seed incidents describe, so loopwatch's rules
// can be shown to catch them. Every field is off by default.
type Faults struct {
	// HotLoop writes a timestamp annotation on every reconcile and drops the
	// generation predicate, so each write wakes the controller again (seed 002).
	HotLoop bool
	// NPlusOne lists every Backup of the namespace and GETs each one straight
	// from the API server (no cache, no index) on every reconcile (seed 000).
	NPlusOne bool
	// NPlusOneFanout caps the per-object GETs of NPlusOne; the seed's "50 API
	// calls per object". Defaults to 50.
	NPlusOneFanout int
	// SlowStore adds this latency to every store call (seed 000: 45 s reconciles).
	SlowStore time.Duration
	// StoreOutage makes store deletes hang until their timeout (seed 000's
	// outage during deletion).
	StoreOutage bool
	// Fight runs a second writer that keeps setting FightAnnotation to another
	// value while the controller sets it back (seed 004).
	Fight bool
	// NoLeaderElection runs without leader election, so replicas race (seed 000).
	NoLeaderElection bool
	// MassUpdateEvery, when non-zero, touches every Backup and requeues all of
	// them at this period (seed 000's periodic spikes).
	MassUpdateEvery time.Duration
	// FailingStore makes every store write fail (an error storm).
	FailingStore bool
}

// Annotations written by fault modes. None of them is written when the faults are off.
const (
	// HotLoopAnnotation carries the time of the last reconcile in hot-loop mode.
	HotLoopAnnotation = "backup.loopwatch.dev/last-reconciled"
	// FightAnnotation is the field two writers fight over in fight mode.
	FightAnnotation = "backup.loopwatch.dev/tier"
	// MassUpdateAnnotation is stamped on every Backup by the mass updater.
	MassUpdateAnnotation = "backup.loopwatch.dev/mass-updated"
)

// Values of FightAnnotation: the controller wants ControllerTier, the fighter FighterTier.
const (
	ControllerTier = "standard"
	FighterTier    = "premium"
)
