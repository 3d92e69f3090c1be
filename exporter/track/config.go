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
	"fmt"
	"time"
	"unsafe"
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
	// MaxOffenders bounds each offender table (fights, hot objects, races, race candidates).
	MaxOffenders int
	// OffenderTTL is how long an offender stays reported after its last write.
	OffenderTTL time.Duration
	// MaxRacePods bounds the pod names kept per replica race.
	MaxRacePods int

	// ReorderWait is how long a write waits before the detections take it, so that they take
	// writes in the order they happened (their event time) although each API server sends its
	// own batches, seconds apart, and retries a refused one later: at least the API server's
	// --audit-webhook-batch-max-wait plus one retry (--audit-webhook-initial-backoff, +20 %
	// jitter). A write that arrives later than that is taken at once and counted late. Negative:
	// writes are taken as they arrive.
	ReorderWait time.Duration
	// MaxReorderBytes bounds the writes waiting, in bytes (each entry and the strings it holds);
	// when it is reached the oldest is taken before its wait is over (counted as overflow).
	MaxReorderBytes int64

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
		// The deploy files' --audit-webhook-batch-max-wait (5s) plus one retry at the default
		// --audit-webhook-initial-backoff (10s, up to 12 s with jitter), and a margin.
		ReorderWait: 20 * time.Second,
		// About 70,000 writes of real events (~450 B each with their strings): 3,500 writes/s
		// over the wait.
		MaxReorderBytes: 32 << 20,
		Now:             time.Now,
	}
}

// MaxReorderWait bounds ReorderWait: writes wait that long before fights are seen, and the
// buffer holds what arrives meanwhile.
const MaxReorderWait = 10 * time.Minute

// MaxFightHandoffs bounds FightHandoffs: the times of the last FightHandoffs-1 handoffs are kept
// for every tracked object (4 bytes each), so that the fight window slides.
const MaxFightHandoffs = 64

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
	if c.ReorderWait == 0 {
		c.ReorderWait = d.ReorderWait
	}
	if c.MaxReorderBytes == 0 {
		c.MaxReorderBytes = d.MaxReorderBytes
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
	if c.FightHandoffs < 2 || c.FightHandoffs > MaxFightHandoffs {
		errs = append(errs, fmt.Errorf("fightHandoffs must be between 2 and %d", MaxFightHandoffs))
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
	if c.MaxObjects < 0 || c.MaxOffenders < 0 || c.MaxResources < 0 || c.MaxRacePods < 0 || c.MaxReorderBytes < 0 {
		errs = append(errs, errors.New("maxObjects, maxOffenders, maxResources, maxRacePods and maxReorderBytes must not be negative"))
	}
	if c.ReorderWait > MaxReorderWait {
		errs = append(errs, fmt.Errorf("reorderWait must be at most %s", MaxReorderWait))
	}
	return c, errors.Join(errs...)
}

var errSinkRequired = errors.New("tracker needs a sink")

// MemoryBound is the most memory a tracker with this configuration holds, whatever the events,
// when no kept string is longer than maxValueBytes: the object table and its handoff times, the
// actor candidates and labels, the name cache, the group/resource pairs, the four offender tables
// (fights, hot objects, races and race candidates) and the reorder buffer.
func (c Config) MemoryBound(maxValueBytes int) (int64, error) {
	c, err := c.withDefaults()
	if err != nil {
		return 0, err
	}
	v := int64(maxValueBytes)
	str := int64(unsafe.Sizeof("")) + v
	slots := int64(len(newObjectTable(c.MaxObjects, 1, 0).slots))
	objects := slots * (int64(unsafe.Sizeof(objectState{})) + 4*int64(c.FightHandoffs-1))
	const mapEntry = 48 // a map slot with its hash and control bytes, rounded up
	candidates := int64(c.Candidates) * (int64(unsafe.Sizeof(candidate{})) + v + 8 + mapEntry)
	labels := int64(c.TopK) * (str + mapEntry)
	names := int64(len(newNameCache(4*c.Candidates).slots)) * (int64(unsafe.Sizeof(nameSlot{})) + v)
	resources := int64(c.MaxResources) * (2*str + mapEntry)
	// An offender names its object (five strings) and up to two actors, or a race its pods.
	offender := 7*str + int64(c.MaxRacePods)*str + 256
	offenders := 4 * int64(c.MaxOffenders) * (offender + mapEntry)
	return objects + candidates + labels + names + resources + offenders + c.reorderBound(), nil
}

// ReorderMemoryBound is the part of MemoryBound the reorder buffer holds: its entries and their
// strings, which it counts against MaxReorderBytes, and the emptied runs it keeps for reuse.
func (c Config) ReorderMemoryBound() (int64, error) {
	c, err := c.withDefaults()
	if err != nil {
		return 0, err
	}
	return c.reorderBound(), nil
}

func (c Config) reorderBound() int64 {
	if c.ReorderWait <= 0 {
		return 0
	}
	return c.MaxReorderBytes + spareRuns*spareRunEntries*4
}
