// Package analyze builds the post-mortem report of `loopwatch audit analyze`: who wrote, which
// objects were fought over and by whom, which were rewritten hot, which replicas raced, and who
// got conflicts, from an audit log file.
package analyze

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/loopwatch/loopwatch/exporter/decode"
	"github.com/loopwatch/loopwatch/exporter/track"
)

// Options tunes the analysis.
type Options struct {
	// Tracker holds the detection thresholds; its clock and bounds are set by Analyze.
	Tracker track.Config
	// TopWriters bounds the writers listed (20 when 0).
	TopWriters int
	// MaxLineBytes bounds one log line (4 MiB when 0).
	MaxLineBytes int
}

// Report is the post-mortem report.
type Report struct {
	// Events counts the events counted (ResponseComplete and Panic stages).
	Events int `json:"events"`
	// Writes counts write requests among them, Reads list and watch requests.
	Writes int `json:"writes"`
	Reads  int `json:"reads"`
	// Skipped counts lines that were malformed or too long.
	Skipped int       `json:"skipped"`
	First   time.Time `json:"first"`
	Last    time.Time `json:"last"`

	TopWriters []Writer          `json:"topWriters"`
	Fights     []track.Fight     `json:"fights"`
	HotObjects []track.HotObject `json:"hotObjects"`
	Races      []track.Race      `json:"races"`
	Conflicts  []ActorConflicts  `json:"conflicts"`
	TopReaders []Reader          `json:"topReaders"`
	actors     map[string]*Writer
	readers    map[string]*Reader
}

// Writer is one actor's writes.
type Writer struct {
	Actor     string         `json:"actor"`
	Writes    int            `json:"writes"`
	Conflicts int            `json:"conflicts"`
	Failed    int            `json:"failed"`
	Verbs     map[string]int `json:"verbs"`
}

// Reader is one actor's list and watch requests.
type Reader struct {
	Actor string `json:"actor"`
	Lists int    `json:"lists"`
	Watch int    `json:"watches"`
}

// ActorConflicts is one actor's 409 answers, by resource.
type ActorConflicts struct {
	Actor     string         `json:"actor"`
	Conflicts int            `json:"conflicts"`
	Resources map[string]int `json:"resources"`
}

// Analyze reads an audit log (one Event per line, as the log backend writes it; lines holding a
// whole EventList, as the webhook sends it, are accepted too) and builds the report.
func Analyze(r io.Reader, opts Options) (*Report, error) {
	if opts.TopWriters == 0 {
		opts.TopWriters = 20
	}
	if opts.MaxLineBytes == 0 {
		opts.MaxLineBytes = 4 << 20
	}
	rep := &Report{actors: map[string]*Writer{}, readers: map[string]*Reader{}}
	conflicts := map[string]*ActorConflicts{}
	var latest time.Time
	cfg := opts.Tracker
	cfg.Now = func() time.Time { return latest }
	// A post-mortem keeps every offender: no expiry, generous caps.
	cfg.OffenderTTL = 100 * 365 * 24 * time.Hour
	if cfg.MaxOffenders == 0 {
		cfg.MaxOffenders = 10000
	}
	sink := &reportSink{rep: rep, conflicts: conflicts}
	tr, err := track.New(cfg, sink)
	if err != nil {
		return nil, fmt.Errorf("tracker config: %w", err)
	}
	d := decode.NewDecoder(0)
	var one decode.Event
	observe := func(ev *decode.Event) {
		if !ev.Counts() {
			return
		}
		if ts := ev.StageTimestamp; !ts.IsZero() {
			if ts.After(latest) {
				latest = ts
			}
			if rep.First.IsZero() || ts.Before(rep.First) {
				rep.First = ts
			}
			if ts.After(rep.Last) {
				rep.Last = ts
			}
		}
		tr.Observe(ev)
		rep.Events++
	}
	err = decode.ScanLines(r, opts.MaxLineBytes, func(line []byte) {
		if isEventList(line) {
			events, err := d.DecodeList(line)
			if err != nil {
				rep.Skipped++
				return
			}
			for i := range events {
				observe(&events[i])
			}
			return
		}
		if err := d.DecodeEvent(line, &one); err != nil {
			rep.Skipped++
			return
		}
		observe(&one)
	}, func() { rep.Skipped++ })
	if err != nil {
		return nil, err
	}
	rep.Fights, rep.HotObjects, rep.Races = tr.Fights(), tr.HotObjects(), tr.Races()
	rep.finish(opts.TopWriters, conflicts)
	return rep, nil
}

func isEventList(line []byte) bool {
	head := line[:min(len(line), 256)]
	return bytes.Contains(head, []byte(`"EventList"`)) || bytes.HasPrefix(head, []byte(`{"items"`))
}

func (r *Report) finish(top int, conflicts map[string]*ActorConflicts) {
	for _, w := range r.actors {
		r.TopWriters = append(r.TopWriters, *w)
	}
	sort.Slice(r.TopWriters, func(i, j int) bool {
		a, b := r.TopWriters[i], r.TopWriters[j]
		if a.Writes != b.Writes {
			return a.Writes > b.Writes
		}
		return a.Actor < b.Actor
	})
	if len(r.TopWriters) > top {
		r.TopWriters = r.TopWriters[:top]
	}
	for _, rd := range r.readers {
		r.TopReaders = append(r.TopReaders, *rd)
	}
	sort.Slice(r.TopReaders, func(i, j int) bool {
		a, b := r.TopReaders[i], r.TopReaders[j]
		if a.Lists+a.Watch != b.Lists+b.Watch {
			return a.Lists+a.Watch > b.Lists+b.Watch
		}
		return a.Actor < b.Actor
	})
	if len(r.TopReaders) > top {
		r.TopReaders = r.TopReaders[:top]
	}
	for _, c := range conflicts {
		r.Conflicts = append(r.Conflicts, *c)
	}
	sort.Slice(r.Conflicts, func(i, j int) bool {
		a, b := r.Conflicts[i], r.Conflicts[j]
		if a.Conflicts != b.Conflicts {
			return a.Conflicts > b.Conflicts
		}
		return a.Actor < b.Actor
	})
	if r.TopWriters == nil {
		r.TopWriters = []Writer{}
	}
	if r.TopReaders == nil {
		r.TopReaders = []Reader{}
	}
	if r.Conflicts == nil {
		r.Conflicts = []ActorConflicts{}
	}
}

// reportSink totals observations by full actor name.
type reportSink struct {
	rep       *Report
	conflicts map[string]*ActorConflicts
}

func resourceName(o *track.Observation) string {
	if o.Event.APIGroup == "" {
		return o.Event.Resource
	}
	return o.Event.Resource + "." + o.Event.APIGroup
}

func (s *reportSink) Write(o *track.Observation) {
	s.rep.Writes++
	w := s.rep.actors[o.Actor]
	if w == nil {
		w = &Writer{Actor: o.Actor, Verbs: map[string]int{}}
		s.rep.actors[o.Actor] = w
	}
	w.Writes++
	w.Verbs[o.Event.Verb]++
	if o.Event.Code >= 400 || o.Event.Code == 0 {
		w.Failed++
	}
	if !o.Event.IsConflict() {
		return
	}
	w.Conflicts++
	c := s.conflicts[o.Actor]
	if c == nil {
		c = &ActorConflicts{Actor: o.Actor, Resources: map[string]int{}}
		s.conflicts[o.Actor] = c
	}
	c.Conflicts++
	c.Resources[resourceName(o)]++
}

func (s *reportSink) Read(o *track.Observation) {
	s.rep.Reads++
	r := s.rep.readers[o.Actor]
	if r == nil {
		r = &Reader{Actor: o.Actor}
		s.rep.readers[o.Actor] = r
	}
	if o.Event.Verb == "watch" {
		r.Watch++
	} else {
		r.Lists++
	}
}

func (s *reportSink) Handoff(*track.Observation, string, string) {}
func (s *reportSink) Demoted(string)                             {}
