package controller

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// expectations remembers the Snapshots a Backup's reconcile just created or
// deleted, until the cache shows them. Without it a reconcile that runs before
// the informer has seen its own create would create a second Snapshot (the
// expectations pattern of the ReplicaSet controller). Entries expire
// after ttl so a lost watch event cannot block a Backup forever.
type expectations struct {
	mu    sync.Mutex
	clock clock.PassiveClock
	ttl   time.Duration
	// byOwner maps a Backup key to the Snapshot names it waits for.
	byOwner map[string]map[string]expectation
}

type expectation struct {
	deletion bool
	deadline time.Time
}

func newExpectations(c clock.PassiveClock, ttl time.Duration) *expectations {
	return &expectations{clock: c, ttl: ttl, byOwner: map[string]map[string]expectation{}}
}

// expectCreate records that owner created name.
func (e *expectations) expectCreate(owner, name string) { e.set(owner, name, false) }

// expectDelete records that owner deleted name.
func (e *expectations) expectDelete(owner, name string) { e.set(owner, name, true) }

func (e *expectations) set(owner, name string, deletion bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	m := e.byOwner[owner]
	if m == nil {
		m = map[string]expectation{}
		e.byOwner[owner] = m
	}
	m[name] = expectation{deletion: deletion, deadline: e.clock.Now().Add(e.ttl)}
}

// satisfied reports whether the cache (seen: name → being deleted) shows every
// expected create and delete of owner, forgetting those it shows or that expired.
func (e *expectations) satisfied(owner string, seen map[string]bool) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.clock.Now()
	m := e.byOwner[owner]
	for name, exp := range m {
		deleting, present := seen[name]
		observed := (!exp.deletion && present) || (exp.deletion && (!present || deleting))
		if observed || now.After(exp.deadline) {
			delete(m, name)
		}
	}
	if len(m) == 0 {
		delete(e.byOwner, owner)
		return true
	}
	return false
}

// forget drops every expectation of owner (it was deleted).
func (e *expectations) forget(owner string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.byOwner, owner)
}
