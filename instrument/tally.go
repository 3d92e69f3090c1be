package instrument

import (
	"context"
	"fmt"
	"strings"
	"sync"
)

// Call is one API call made through an instrumented client.
type Call struct {
	// Verb is what the call did.
	Verb Verb
	// Kind is the object's kind, e.g. "Backup", or the list kind for lists.
	Kind string
	// Namespace and Name identify the object; Name is empty for lists.
	Namespace, Name string
	// Patch is the patch body for patch verbs, truncated, to explain a write
	// that should not have happened.
	Patch string
}

// String renders the call as "patch Backup ns/name {...}".
func (c Call) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", c.Verb, c.Kind)
	switch {
	case c.Namespace != "" && c.Name != "":
		fmt.Fprintf(&b, " %s/%s", c.Namespace, c.Name)
	case c.Name != "":
		fmt.Fprintf(&b, " %s", c.Name)
	case c.Namespace != "":
		fmt.Fprintf(&b, " in %s", c.Namespace)
	}
	if c.Patch != "" {
		fmt.Fprintf(&b, " %s", c.Patch)
	}
	return b.String()
}

// Tally collects the calls of one reconcile (or of any scope a caller wants to
// observe). It is safe for concurrent use.
type Tally struct {
	mu    sync.Mutex
	calls []Call
	// patches says whether to keep patch bodies (costs a second patch
	// computation per write; only worth it when someone will read them).
	patches bool
}

// Calls returns a copy of the calls recorded so far.
func (t *Tally) Calls() []Call {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Call(nil), t.calls...)
}

// Writes returns the recorded calls that wrote.
func (t *Tally) Writes() []Call {
	var out []Call
	for _, c := range t.Calls() {
		if c.Verb.Access() == AccessWrite {
			out = append(out, c)
		}
	}
	return out
}

// Reads returns how many recorded calls read.
func (t *Tally) Reads() int {
	n := 0
	for _, c := range t.Calls() {
		if c.Verb.Access() == AccessRead {
			n++
		}
	}
	return n
}

func (t *Tally) add(c Call) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.calls = append(t.calls, c)
}

type tallyKey struct{}

// WithTally returns a context whose instrumented calls, patch bodies
// included, are recorded into a new Tally, and that Tally.
func WithTally(ctx context.Context) (context.Context, *Tally) {
	t := &Tally{patches: true}
	return context.WithValue(ctx, tallyKey{}, t), t
}

// withCountingTally is WithTally without patch bodies.
func withCountingTally(ctx context.Context) (context.Context, *Tally) {
	t := &Tally{}
	return context.WithValue(ctx, tallyKey{}, t), t
}

// TallyFrom returns the Tally carried by ctx, or nil.
func TallyFrom(ctx context.Context) *Tally {
	t, _ := ctx.Value(tallyKey{}).(*Tally)
	return t
}
