// Package analyze builds the post-mortem report of `loopwatch audit analyze`: who wrote, which
// objects were fought over and by whom, which were rewritten hot, which replicas raced, and who
// got conflicts, from an audit log file.
package analyze

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/loopwatch/loopwatch/exporter/decode"
	"github.com/loopwatch/loopwatch/exporter/dedupe"
	"github.com/loopwatch/loopwatch/exporter/managed"
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
	// DedupeSize is how many events are remembered per generation to recognise repeats (two
	// generations; dedupe.DefaultSize when 0, off when negative): repeats farther apart than that
	// are counted again.
	DedupeSize int
	// MaxValueBytes bounds every string kept (decode.DefaultMaxValueBytes when 0).
	MaxValueBytes int
	// Timelines keeps what the HTML report draws (WriteHTML): each finding's writes by actor
	// or pod, and every actor's writes and initial lists over time, all bounded (see
	// timeline.go). Off, WriteHTML draws no timeline.
	Timelines bool
	// ringSize replaces ringSize (tests).
	ringSize int
}

// maxSkippedLines is how many line numbers of skipped lines the report lists.
const maxSkippedLines = 5

// Report is the post-mortem report.
type Report struct {
	// Events counts the events counted: attributable (a verb and a user) and at a stage that
	// completes a request, each once.
	Events int `json:"events"`
	// Writes counts write requests among them, Reads list and watch requests.
	Writes int `json:"writes"`
	Reads  int `json:"reads"`
	// Duplicates counts events dropped as repeats of one counted before (overlapping log files,
	// a retried webhook batch): the exporter drops the same ones.
	Duplicates int `json:"duplicates"`
	// Skipped lists the lines that were not read as audit events.
	Skipped Skipped `json:"skipped"`
	// Forms counts the lines (or document elements) of each form recognised: the API server's
	// log, a webhook batch, or a managed cluster's form (see package managed).
	Forms map[string]int `json:"forms"`
	First time.Time      `json:"first"`
	Last  time.Time      `json:"last"`

	TopWriters []Writer          `json:"topWriters"`
	Fights     []track.Fight     `json:"fights"`
	HotObjects []track.HotObject `json:"hotObjects"`
	Races      []track.Race      `json:"races"`
	Conflicts  []ActorConflicts  `json:"conflicts"`
	TopReaders []Reader          `json:"topReaders"`
	actors     map[string]*writerState
	readers    map[string]*readerState
	// rec is what the HTML report draws (Options.Timelines), timelines its findings' writes.
	rec       *recorder
	timelines map[timelineKey]*timeline
	// Options are the options the report was made with (thresholds for the HTML report).
	opts Options
}

// Skipped counts the lines that were not read as audit events, by reason, with the first few
// line numbers: a line is never silently taken for something it is not. A line of a delivery
// form (a Firehose request, an Event Hub body) holds many records: each record not read counts.
type Skipped struct {
	Lines int `json:"lines"`
	// Malformed lines are not JSON, or JSON that does not decode as an audit event or list.
	Malformed int `json:"malformed"`
	// TooLong lines are longer than the line limit.
	TooLong int `json:"tooLong"`
	// NotAuditEvents are JSON objects that are no audit event: another format (a GKE or AKS log
	// entry wrapping one, say) that this reader does not understand.
	NotAuditEvents int `json:"notAuditEvents"`
	// TooManyEvents are event lists over the per-list event limit.
	TooManyEvents int `json:"tooManyEvents"`
	// Unattributable are audit events that complete a request but name no verb or no user.
	Unattributable int `json:"unattributable"`
	// Unmappable are cloud audit log entries (GKE) that cannot be mapped to an audit event
	// without guessing: a method, resource name, status or time that cannot be read.
	Unmappable int `json:"unmappable"`
	// Truncated are events CloudWatch Logs cut at its 256 KB limit (EKS).
	Truncated int `json:"truncated"`
	// FirstLines are the numbers of the first skipped lines (from 1).
	FirstLines []int `json:"firstLines"`
}

func (s *Skipped) add(n int, reason *int) { s.addN(n, 1, reason) }

// addN counts records records of line n under reason.
func (s *Skipped) addN(n, records int, reason *int) {
	s.Lines += records
	*reason += records
	if len(s.FirstLines) < maxSkippedLines {
		s.FirstLines = append(s.FirstLines, n)
	}
}

// Writer is one actor's writes.
type Writer struct {
	Actor     string         `json:"actor"`
	Writes    int            `json:"writes"`
	Conflicts int            `json:"conflicts"`
	Failed    int            `json:"failed"`
	Verbs     map[string]int `json:"verbs"`
}

// writerState is a writer while the log is read: id numbers it for the recorder, series is its
// over-time series (-1 for none).
type writerState struct {
	Writer
	id     uint32
	series int
}

// Reader is one actor's list and watch requests.
type Reader struct {
	Actor string `json:"actor"`
	Lists int    `json:"lists"`
	Watch int    `json:"watches"`
	// InitialLists are the requests that loaded a collection from scratch (an informer's initial
	// list or relist): its lists, and its watches with sendInitialEvents=true (WatchList, how
	// client-go from 1.35 lists).
	InitialLists int `json:"initialLists"`
}

// readerState is a reader while the log is read, with its over-time series (-1 for none).
type readerState struct {
	Reader
	series int
}

// ActorConflicts is one actor's 409 answers, by resource.
type ActorConflicts struct {
	Actor     string         `json:"actor"`
	Conflicts int            `json:"conflicts"`
	Resources map[string]int `json:"resources"`
}

// Analyze reads an audit log (one Event per line, as the log backend writes it, in any version
// from audit.k8s.io/v1beta1; lines holding a whole EventList, as the webhook sends it, are
// accepted too), or a managed cluster's form of one — EKS (Firehose requests, CloudWatch exports
// to S3, `aws logs filter-log-events` JSON), GKE (Pub/Sub pushes, `gcloud logging read` JSON,
// Cloud Storage sink files), AKS (Event Hub bodies, PT1H.json) — recognised by itself, line by
// line (package managed), gzip'd or not, and builds the report. It counts what the exporter counts: the same events,
// repeats dropped the same way.
func Analyze(r io.Reader, opts Options) (*Report, error) {
	return AnalyzeAll([]io.Reader{r}, opts)
}

// AnalyzeAll reads several logs, one after another, as one (the logs of several API servers, or
// consecutive files of one): events repeated across them count once, and the line numbers of
// skipped lines count from the start of each log.
func AnalyzeAll(logs []io.Reader, opts Options) (*Report, error) {
	if opts.TopWriters == 0 {
		opts.TopWriters = 20
	}
	if opts.MaxLineBytes == 0 {
		opts.MaxLineBytes = 4 << 20
	}
	switch {
	case opts.DedupeSize == 0:
		opts.DedupeSize = dedupe.DefaultSize
	case opts.DedupeSize < 0:
		opts.DedupeSize = 0
	}
	rep := &Report{actors: map[string]*writerState{}, readers: map[string]*readerState{}, Skipped: Skipped{FirstLines: []int{}}, opts: opts}
	if opts.Timelines {
		rep.rec = newRecorder(cmp.Or(opts.ringSize, ringSize))
	}
	conflicts := map[string]*ActorConflicts{}
	var latest time.Time
	cfg := opts.Tracker
	cfg.Now = func() time.Time { return latest }
	// A post-mortem keeps every offender: no expiry, generous caps.
	cfg.OffenderTTL = 100 * 365 * 24 * time.Hour
	if cfg.MaxOffenders == 0 {
		cfg.MaxOffenders = 10000
	}
	rs := &reportSink{rep: rep, conflicts: conflicts, rec: rep.rec}
	var sink track.Sink = rs
	if rep.rec != nil {
		sink = timelineSink{rs}
	}
	tr, err := track.New(cfg, sink)
	if err != nil {
		return nil, fmt.Errorf("tracker config: %w", err)
	}
	seen := dedupe.New(opts.DedupeSize)
	sk := &rep.Skipped
	observe := func(n int, ev *decode.Event) {
		if ts := ev.When(); ev.Attributable() && !ts.IsZero() && ts.After(latest) {
			latest = ts // the tracker's clock: the latest event time seen
		}
		res := tr.Observe(ev, seen)
		switch {
		case res.Unattributable > 0:
			sk.add(n, &sk.Unattributable)
		case res.Skipped > 0:
			rep.Duplicates++
		case res.Counted > 0:
			rep.Events++
			if ts := ev.When(); !ts.IsZero() {
				if rep.First.IsZero() || ts.Before(rep.First) {
					rep.First = ts
				}
				if ts.After(rep.Last) {
					rep.Last = ts
				}
			}
		}
	}
	rep.Forms = map[string]int{}
	for _, r := range logs {
		if err := read(r, opts, observe, sk, rep.Forms); err != nil {
			return nil, err
		}
	}
	// The end of the logs: the writes still waiting for later ones (Config.ReorderWait, by the
	// latest event time) are taken now.
	tr.Flush()
	rep.Fights, rep.HotObjects, rep.Races = tr.Fights(), tr.HotObjects(), tr.Races()
	if rep.rec != nil {
		rep.timelines = rep.rec.finish()
	}
	rep.finish(opts.TopWriters, conflicts)
	return rep, nil
}

// read reads one log into observe, counting what it skips in sk and the forms it reads in forms.
func read(r io.Reader, opts Options, observe func(int, *decode.Event), sk *Skipped, forms map[string]int) error {
	sum, err := managed.Read(r, managed.ReadOptions{
		MaxLineBytes: opts.MaxLineBytes,
		Limits:       managed.Limits{MaxValueBytes: opts.MaxValueBytes, MaxEvents: decode.DefaultMaxEvents},
	}, func(n int, events []decode.Event) {
		for i := range events {
			observe(n, &events[i])
		}
	}, func(u managed.Unreadable) {
		switch {
		case errors.Is(u.Err, decode.ErrTooManyEvents):
			sk.addN(u.Line, u.Records, &sk.TooManyEvents)
		case errors.Is(u.Err, decode.ErrNotEventList), u.Reason == managed.RecordNotAudit:
			sk.addN(u.Line, u.Records, &sk.NotAuditEvents)
		case u.Reason == managed.RecordTooLarge:
			sk.addN(u.Line, u.Records, &sk.TooLong)
		case u.Reason == managed.RecordUnmappable:
			sk.addN(u.Line, u.Records, &sk.Unmappable)
		case u.Reason == managed.RecordTruncated:
			sk.addN(u.Line, u.Records, &sk.Truncated)
		default:
			sk.addN(u.Line, u.Records, &sk.Malformed)
		}
	})
	if err != nil {
		return err
	}
	for f, n := range sum.Forms {
		if n > 0 {
			forms[managed.Form(f).String()] += n
		}
	}
	return nil
}

func (r *Report) finish(top int, conflicts map[string]*ActorConflicts) {
	for _, w := range r.actors {
		r.TopWriters = append(r.TopWriters, w.Writer)
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
		r.TopReaders = append(r.TopReaders, rd.Reader)
	}
	sort.Slice(r.TopReaders, func(i, j int) bool {
		a, b := r.TopReaders[i], r.TopReaders[j]
		if a.InitialLists != b.InitialLists {
			return a.InitialLists > b.InitialLists
		}
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
	rec       *recorder
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
		w = &writerState{Writer: Writer{Actor: o.Actor, Verbs: map[string]int{}}, id: uint32(len(s.rep.actors)), series: -1}
		if len(s.rep.actors) < maxSeries {
			w.series = len(s.rep.actors)
		}
		s.rep.actors[o.Actor] = w
	}
	w.Writes++
	w.Verbs[o.Event.Verb]++
	if s.rec != nil {
		s.rec.write(o, w)
	}
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
		r = &readerState{Reader: Reader{Actor: o.Actor}, series: -1}
		if len(s.rep.readers) < maxSeries {
			r.series = len(s.rep.readers)
		}
		s.rep.readers[o.Actor] = r
	}
	if o.Event.Verb == "watch" {
		r.Watch++
	} else {
		r.Lists++
	}
	if o.Event.IsInitialList() {
		r.InitialLists++
		if s.rec != nil {
			s.rec.initialList(o.Event, r)
		}
	}
}

func (s *reportSink) Handoff(h *track.Handoff) {
	if s.rec != nil {
		s.rec.handoff(h)
	}
}

func (s *reportSink) Demoted(string) {}

// timelineSink is the report's sink when the HTML report is drawn (Options.Timelines): it is
// also the track.FindingSink that feeds the recorder the writes the detections take, in event
// time, and the findings as they begin.
type timelineSink struct{ *reportSink }

// Taken implements track.FindingSink: the recorder keeps the write, in the order the detections
// count it.
func (s timelineSink) Taken(w *track.Taken) {
	s.rec.taken(w, s.rep.actors)
}

// Found implements track.FindingSink: the recorder starts drawing the finding's writes.
func (s timelineSink) Found(f *track.Found) {
	s.rec.found(f, s.rep.actors)
}
