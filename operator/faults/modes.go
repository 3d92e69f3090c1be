// Package faults breaks the reference backup operator on purpose, from the
// outside, so loopwatch's rules and dashboards can be shown to catch each
// failure: it decorates the Backup reconciler, adds event sources and
// competing writers to the manager, and wraps the archive store. The
// reconcilers in package controller know nothing of it.
package faults

import "time"

// Modes switches the faults on. Every field is off by default.
type Modes struct {
	// HotLoop patches a timestamp annotation after every reconcile and watches
	// Backups without a predicate, so each of the controller's own writes wakes
	// it again: a controller that never settles.
	HotLoop bool
	// NPlusOne lists every Backup of the namespace and GETs each one straight
	// from the API server (no cache, no index) before every reconcile: API
	// calls per reconcile grow with the fleet.
	NPlusOne bool
	// NPlusOneFanout caps the per-object GETs of NPlusOne. Defaults to 50.
	NPlusOneFanout int
	// SlowStore adds this latency to every store call: reconciles as slow as
	// the store.
	SlowStore time.Duration
	// StoreOutage makes store deletes hang until their timeout, as an
	// unreachable object store does during a deletion.
	StoreOutage bool
	// Fight runs a second writer that keeps setting FightAnnotation to
	// FighterTier while the controller sets it back to ControllerTier: two
	// actors fighting over one field.
	Fight bool
	// NoLeaderElection runs without leader election, so replicas reconcile the
	// same objects at once.
	NoLeaderElection bool
	// MassUpdateEvery, when non-zero, touches every Backup and requeues all of
	// them at this period, as a cron job touching everything does: periodic
	// load spikes.
	MassUpdateEvery time.Duration
	// FailingStore makes every store write fail: an error and retry storm.
	FailingStore bool
	// ReconcileDelay adds this latency to every Backup reconcile, before it
	// runs: a reconcile that waits on a slow dependency. With few workers the
	// queue falls behind when objects change faster than that.
	ReconcileDelay time.Duration
	// HangBackup names a Backup whose reconciles never return (until the
	// process stops): a call without a timeout holds a worker for good.
	HangBackup string
	// FinalizerStuck makes a Backup being deleted wait for an external
	// clean-up that never completes: the controller checks again every few
	// seconds, without an error, and never removes its finalizer.
	FinalizerStuck bool
	// RelistEvery, when non-zero, starts a fresh ConfigMap informer at this
	// period, waits for its initial list and stops it again: a client that
	// relists in a loop, as one that rebuilds its informers on every error
	// does. With client-go's WatchList on (the default since 1.35) each
	// initial list is a WATCH with sendInitialEvents=true, else a LIST.
	RelistEvery time.Duration
	// LeaseUnreachableAfter, when non-zero, makes every request of the leader
	// elector fail from this long after the start: the leader cannot renew
	// its lease (it gives up leadership and exits) and no replica can take it.
	LeaseUnreachableAfter time.Duration
	// LeaseLostAfter, when non-zero, makes every request of the leader elector
	// fail once this process has led for this long: it loses its lease and
	// exits. Restarted replicas with this fault take the lease in turn and
	// lose it again: leadership flaps.
	LeaseLostAfter time.Duration
	// WorkqueueMetricsUnregistered gives the Backup controller a work queue
	// whose metrics go to a registry nobody serves, as when another workqueue
	// metrics provider was registered before controller-runtime's.
	WorkqueueMetricsUnregistered bool
	// MetricsOwnRegistry serves the metrics endpoint from a registry of its
	// own (Go and process metrics only) instead of controller-runtime's: the
	// target is up, and every controller-runtime metric goes to a registry
	// nobody serves (OwnRegistryMetrics).
	MetricsOwnRegistry bool
}

// Annotations the fault modes write. None is written when the modes are off.
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

// RelisterUserAgent is the user agent of the relisting client of RelistEvery.
const RelisterUserAgent = "loopwatch-relister"

// FighterUserAgent is the user agent of the fight mode's second writer, so
// audit logs tell the two actors apart even without impersonation.
const FighterUserAgent = "loopwatch-fighter"
