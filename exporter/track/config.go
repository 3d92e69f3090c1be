// Package track attributes audit events to actors and keeps the small, expiring per-object state
// that detects write fights, hot objects and replica races.
//
// Every structure is bounded: actor labels (top-K plus "other"), candidate actors, group/resource
// label pairs, tracked objects (a fixed set-associative table with eviction) and the offender
// tables behind the "top offenders" gauges. Windows are measured in event time (the API server's
// stageTimestamp); expiry of offenders and the decay of actor counts use the injected clock.
package track

import (
	"errors"
	"time"
)

// OtherLabel is the label value for actors and resources outside the bounded label sets.
const OtherLabel = "other"

// Config tunes the tracker. Zero fields take the defaults of DefaultConfig.
type Config struct {
	// TopK is how many actors get their own label value.
	TopK int
	// Candidates bounds the actors whose activity is counted when ranking (space-saving).
	Candidates int
	// MinLabelCount is the decayed request count an actor needs before it gets a label.
	MinLabelCount float64
	// DecayInterval halves every actor count; it is also when labels are rebalanced.
	DecayInterval time.Duration
	// MaxResources bounds distinct group/resource label pairs; later ones are "other".
	MaxResources int

	// FightHandoffs is N: a fight is at least N handoffs between two actors within FightWindow.
	FightHandoffs int
	FightWindow   time.Duration
	// HotWrites writes by one actor to one object within HotWindow make it hot.
	HotWrites int
	HotWindow time.Duration
	// RaceWindow: writes to one object by two pods of one actor this close together are a race.
	RaceWindow time.Duration

	// MaxObjects bounds tracked objects (rounded up to a multiple of the table's associativity).
	MaxObjects int
	// ObjectTTL is how long an object nobody writes keeps its state.
	ObjectTTL time.Duration
	// MaxOffenders bounds each offender table (fights, hot objects, races).
	MaxOffenders int
	// OffenderTTL is how long an offender stays reported after its last write.
	OffenderTTL time.Duration
	// MaxRacePods bounds the pod names kept per replica race.
	MaxRacePods int

	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		TopK:          20,
		Candidates:    1024,
		MinLabelCount: 1,
		DecayInterval: time.Minute,
		MaxResources:  500,
		FightHandoffs: 4,
		FightWindow:   5 * time.Minute,
		HotWrites:     20,
		HotWindow:     time.Minute,
		RaceWindow:    time.Minute,
		MaxObjects:    1 << 17,
		ObjectTTL:     10 * time.Minute,
		MaxOffenders:  50,
		OffenderTTL:   10 * time.Minute,
		MaxRacePods:   16,
		Now:           time.Now,
	}
}

// withDefaults fills zero fields and checks the rest, reporting every problem.
func (c Config) withDefaults() (Config, error) {
	d := DefaultConfig()
	if c.TopK == 0 {
		c.TopK = d.TopK
	}
	if c.Candidates == 0 {
		c.Candidates = d.Candidates
	}
	if c.MinLabelCount == 0 {
		c.MinLabelCount = d.MinLabelCount
	}
	if c.DecayInterval == 0 {
		c.DecayInterval = d.DecayInterval
	}
	if c.MaxResources == 0 {
		c.MaxResources = d.MaxResources
	}
	if c.FightHandoffs == 0 {
		c.FightHandoffs = d.FightHandoffs
	}
	if c.FightWindow == 0 {
		c.FightWindow = d.FightWindow
	}
	if c.HotWrites == 0 {
		c.HotWrites = d.HotWrites
	}
	if c.HotWindow == 0 {
		c.HotWindow = d.HotWindow
	}
	if c.RaceWindow == 0 {
		c.RaceWindow = d.RaceWindow
	}
	if c.MaxObjects == 0 {
		c.MaxObjects = d.MaxObjects
	}
	if c.ObjectTTL == 0 {
		c.ObjectTTL = max(d.ObjectTTL, c.FightWindow, c.HotWindow, c.RaceWindow)
	}
	if c.MaxOffenders == 0 {
		c.MaxOffenders = d.MaxOffenders
	}
	if c.OffenderTTL == 0 {
		c.OffenderTTL = d.OffenderTTL
	}
	if c.MaxRacePods == 0 {
		c.MaxRacePods = d.MaxRacePods
	}
	if c.Now == nil {
		c.Now = d.Now
	}
	var errs []error
	if c.TopK < 0 {
		errs = append(errs, errors.New("topK must be positive"))
	}
	if c.Candidates < c.TopK {
		errs = append(errs, errors.New("candidates must be at least topK"))
	}
	if c.FightHandoffs < 2 {
		errs = append(errs, errors.New("fightHandoffs must be at least 2"))
	}
	if c.HotWrites < 2 {
		errs = append(errs, errors.New("hotWrites must be at least 2"))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"decayInterval", c.DecayInterval}, {"fightWindow", c.FightWindow}, {"hotWindow", c.HotWindow},
		{"raceWindow", c.RaceWindow}, {"objectTTL", c.ObjectTTL}, {"offenderTTL", c.OffenderTTL},
	} {
		if d.v < time.Second {
			errs = append(errs, errors.New(d.name+" must be at least 1s"))
		}
	}
	if c.MaxObjects < 0 || c.MaxOffenders < 0 || c.MaxResources < 0 || c.MaxRacePods < 0 {
		errs = append(errs, errors.New("maxObjects, maxOffenders, maxResources and maxRacePods must not be negative"))
	}
	return c, errors.Join(errs...)
}

var errSinkRequired = errors.New("tracker needs a sink")
