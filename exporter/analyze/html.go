package analyze

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/loopwatch/loopwatch/exporter/track"
	hr "github.com/loopwatch/loopwatch/internal/htmlreport"
)

// Bounds of the HTML report (besides the recorder's, see timeline.go).
const (
	// maxTableRows bounds the rows of each table; the text and JSON reports list every row.
	maxTableRows = 500
	// maxDrawn bounds the timelines drawn per kind of finding (fights, hot objects, races), the
	// strongest first.
	maxDrawn = 25
	// summaryFindings bounds the findings of each kind the summary lists.
	summaryFindings = 5
	// chartWriters and chartReaders are the actors drawn over time, the most active first.
	chartWriters = 8
	chartReaders = 5
)

// markDefs are the shapes of a timeline's marks, one per lane (modulo four), so that lanes
// differ by shape as well as by colour, and the cross of a write answered 409.
const markDefs = `<svg width="0" height="0" style="position:absolute" aria-hidden="true"><defs>` +
	`<rect id="k0" x="-2.5" y="-7" width="5" height="14"/><circle id="k1" r="4.5"/>` +
	`<path id="k2" d="M0,-6L5.5,5H-5.5Z"/><path id="k3" d="M0,-6.5L5,0L0,6.5L-5,0Z"/>` +
	`<path id="kx" d="M-4.5,-4.5L4.5,4.5M4.5,-4.5L-4.5,4.5"/><path id="kw" d="M-3,-12H3L0,-8Z"/></defs></svg>` + "\n"

// WriteHTML writes the report as one self-contained HTML page: a summary, the writers and
// readers over time, every fight, hot object and replica race with a timeline of its writes (one
// lane per actor, or per pod of a race), and every table of the text report, sortable. Without
// Options.Timelines the timelines and charts are left out. Its size is bounded whatever the log
// (see maxTableRows, maxDrawn and the recorder's bounds), and it says where a bound was reached.
func (r *Report) WriteHTML(out io.Writer) error {
	w := hr.NewWriter(out)
	sub := "No audit events counted."
	if r.Events > 0 {
		sub = fmt.Sprintf("%s to %s UTC (%s)", hr.Stamp(r.First), hr.Stamp(r.Last), hr.Duration(r.Last.Sub(r.First)))
	}
	w.Begin("Audit log post-mortem", sub)
	w.Raw(markDefs)
	r.htmlSummary(w)
	r.htmlFights(w)
	r.htmlHot(w)
	r.htmlRaces(w)
	r.htmlOverTime(w)
	r.htmlTables(w)
	return w.End()
}

func (r *Report) htmlSummary(w *hr.Writer) {
	w.Raw("<section id=\"summary\" aria-labelledby=\"summary-h\">\n<h2 id=\"summary-h\">Summary</h2>\n")
	w.Cards([]hr.Card{
		{Value: fmt.Sprint(r.Events), Label: "audit events counted"},
		{Value: fmt.Sprint(r.Writes), Label: "writes"},
		{Value: fmt.Sprint(r.Reads), Label: "lists and watches"},
		{Value: fmt.Sprint(len(r.actors)), Label: "writers"},
		{Value: fmt.Sprint(len(r.Fights)), Label: "fights"},
		{Value: fmt.Sprint(len(r.HotObjects)), Label: "hot objects"},
		{Value: fmt.Sprint(len(r.Races)), Label: "replica races"},
		{Value: fmt.Sprint(len(r.Conflicts)), Label: "actors with conflicts"},
		{Value: fmt.Sprint(r.Duplicates), Label: "repeats dropped"},
		{Value: fmt.Sprint(r.Skipped.Lines), Label: "lines skipped"},
	})
	w.Raw("<p>Thresholds: a fight is ")
	t := r.opts.Tracker
	w.Text(fmt.Sprintf("%d handoffs between two actors within %s; a hot object %d writes by one actor within %s; a replica race two pods of one actor writing one object within %s.",
		orDefault(t.FightHandoffs, track.DefaultConfig().FightHandoffs), hr.Duration(orDefault(t.FightWindow, track.DefaultConfig().FightWindow)),
		orDefault(t.HotWrites, track.DefaultConfig().HotWrites), hr.Duration(orDefault(t.HotWindow, track.DefaultConfig().HotWindow)),
		hr.Duration(orDefault(t.RaceWindow, track.DefaultConfig().RaceWindow))))
	w.Raw("</p>\n<h3>What was found</h3>\n")
	if len(r.Fights)+len(r.HotObjects)+len(r.Races)+len(r.Conflicts) == 0 {
		w.Raw("<p>No fight, hot object, replica race or conflict.</p>\n")
	} else {
		w.Raw("<ol class=\"found\">\n")
		for i, f := range r.rankedFights() {
			if i == summaryFindings {
				w.Rawf("<li><a href=\"#fights\">%d more fights</a>.</li>\n", len(r.Fights)-summaryFindings)
				break
			}
			w.Rawf("<li><a href=\"#%s\">Fight over %s</a>: %s ⇄ %s, %d handoffs in %s.</li>\n", fightID(f), hr.Esc(f.Object.String()),
				hr.Esc(f.ActorA), hr.Esc(f.ActorB), f.Handoffs, hr.Esc(hr.Duration(f.Last.Sub(f.First))))
		}
		for i, h := range r.rankedHot() {
			if i == summaryFindings {
				w.Rawf("<li><a href=\"#hot\">%d more hot objects</a>.</li>\n", len(r.HotObjects)-summaryFindings)
				break
			}
			w.Rawf("<li><a href=\"#%s\">Hot object %s</a>: %s, %d writes, %.1f/s.</li>\n", hotID(h), hr.Esc(h.Object.String()),
				hr.Esc(h.Actor), h.Writes, h.WritesPerSecond())
		}
		for i, rc := range r.rankedRaces() {
			if i == summaryFindings {
				w.Rawf("<li><a href=\"#races\">%d more replica races</a>.</li>\n", len(r.Races)-summaryFindings)
				break
			}
			w.Rawf("<li><a href=\"#%s\">Replica race on %s</a>: %d pods of %s, %d writes, %d conflicts.</li>\n", raceID(rc), hr.Esc(rc.Object.String()),
				len(rc.Pods), hr.Esc(rc.Actor), rc.Writes, rc.Conflicts)
		}
		for _, c := range r.Conflicts {
			w.Rawf("<li><a href=\"#conflicts\">Conflicts</a>: %s got %d answers 409 (%s).</li>\n", hr.Esc(c.Actor), c.Conflicts, hr.Esc(sortedCounts(c.Resources)))
			break
		}
		w.Raw("</ol>\n")
	}
	if r.rec != nil && r.rec.unkept > 0 {
		w.Note(fmt.Sprintf("%d findings beyond the first %d have no timeline: they are listed in the tables.", r.rec.unkept, maxTimelines))
	}
	w.Raw("</section>\n")
}

func orDefault[T comparable](v, d T) T {
	var zero T
	if v == zero {
		return d
	}
	return v
}

func (r *Report) rankedFights() []track.Fight {
	out := slices.Clone(r.Fights)
	slices.SortStableFunc(out, func(a, b track.Fight) int { return cmp.Compare(b.Handoffs, a.Handoffs) })
	return out
}

func (r *Report) rankedHot() []track.HotObject {
	out := slices.Clone(r.HotObjects)
	slices.SortStableFunc(out, func(a, b track.HotObject) int { return cmp.Compare(b.WritesPerSecond(), a.WritesPerSecond()) })
	return out
}

func (r *Report) rankedRaces() []track.Race {
	out := slices.Clone(r.Races)
	slices.SortStableFunc(out, func(a, b track.Race) int {
		if c := cmp.Compare(b.Conflicts, a.Conflicts); c != 0 {
			return c
		}
		return cmp.Compare(b.Writes, a.Writes)
	})
	return out
}

func fightID(f track.Fight) string {
	return "fight-" + hr.Slug(f.Object.String()+" "+f.ActorA+" "+f.ActorB)
}
func hotID(h track.HotObject) string { return "hot-" + hr.Slug(h.Object.String()+" "+h.Actor) }
func raceID(rc track.Race) string    { return "race-" + hr.Slug(rc.Object.String()+" "+rc.Actor) }

// htmlOverTime draws the top writers' writes and the top readers' initial lists over time.
func (r *Report) htmlOverTime(w *hr.Writer) {
	rec := r.rec
	if rec == nil || !rec.axisSet {
		return
	}
	w.Raw("<section id=\"over-time\" aria-labelledby=\"over-time-h\">\n<h2 id=\"over-time-h\">Writers and readers over time</h2>\n")
	first, last := rec.axis.n, -1
	for _, s := range [][]uint32{rec.writes, rec.initial} {
		for i, c := range s {
			if c != 0 {
				first, last = min(first, i), max(last, i)
			}
		}
	}
	if last < 0 {
		w.Raw("<p>No event with a time.</p>\n</section>\n")
		return
	}
	cut := func(s []uint32) []uint32 {
		if s == nil {
			return make([]uint32, last+1-first)
		}
		return s[first : last+1]
	}
	b := hr.Buckets{Start: time.Unix(0, rec.axis.start+int64(first)*rec.axis.width).UTC(), Width: time.Duration(rec.axis.width)}
	b.Rows = append(b.Rows, hr.BucketRow{Label: "all writers", Counts: cut(rec.writes)})
	for i, wr := range r.TopWriters {
		if i == chartWriters {
			break
		}
		if a := r.actors[wr.Actor]; a != nil && a.series >= 0 && a.series < len(rec.byWriter) {
			b.Rows = append(b.Rows, hr.BucketRow{Label: wr.Actor, Counts: cut(rec.byWriter[a.series])})
		}
	}
	w.RateRows("writes-over-time", "Writes per second: all writers, then the top writers", "writes/s", b)
	if len(r.actors) > maxSeries {
		w.Note(fmt.Sprintf("Only the first %d writers seen have a series of their own; the others count in \"all writers\".", maxSeries))
	}
	var reads []hr.BucketRow
	for i, rd := range r.TopReaders {
		if i == chartReaders || rd.InitialLists == 0 {
			break
		}
		if x := r.readers[rd.Actor]; x != nil && x.series >= 0 && x.series < len(rec.byReader) {
			reads = append(reads, hr.BucketRow{Label: rd.Actor, Counts: cut(rec.byReader[x.series])})
		}
	}
	if len(reads) > 0 {
		b.Rows = append([]hr.BucketRow{{Label: "all readers", Counts: cut(rec.initial)}}, reads...)
		w.RateRows("initial-lists-over-time", "Initial lists per second (lists, and watches with sendInitialEvents=true): all readers, then the top readers", "lists/s", b)
	} else {
		w.Raw("<p>No initial list in the log: the audit policy may leave reads out.</p>\n")
	}
	w.Raw("</section>\n")
}

func (r *Report) timelineOf(kind track.FindingKind, ref track.ObjectRef, actor string) *timeline {
	if r.timelines == nil {
		return nil
	}
	return r.timelines[timelineKey{kind: kind, ref: ref, actor: actor}]
}

func (r *Report) htmlFights(w *hr.Writer) {
	w.Raw("<section id=\"fights\" aria-labelledby=\"fights-h\">\n")
	w.Rawf("<h2 id=\"fights-h\">Fights (%d)</h2>\n<p>One object written alternately by two actors; field managers in brackets.</p>\n", len(r.Fights))
	rows := make([][]hr.Cell, 0, len(r.Fights))
	for _, f := range r.Fights {
		rows = append(rows, []hr.Cell{{Text: f.Object.String(), HTML: link(fightID(f), f.Object.String())}, hr.T(withManager(f.ActorA, f.FieldManagerA)),
			hr.T(withManager(f.ActorB, f.FieldManagerB)), hr.N(f.Handoffs), hr.Time(f.First), hr.Time(f.Last),
			spanCell(f.First, f.Last), hr.T(webhook(f.MutatingWebhook, f.MutatedActor))})
	}
	if len(rows) > 0 {
		w.Table("fights-table", "Fights", []hr.Column{{Name: "Object"}, {Name: "Actor A"}, {Name: "Actor B"}, {Name: "Handoffs", Numeric: true},
			{Name: "First"}, {Name: "Last"}, {Name: "Span (s)", Numeric: true}, {Name: "Mutating webhook"}}, rows, maxTableRows)
	}
	for i, f := range r.rankedFights() {
		if i == maxDrawn {
			w.Note(fmt.Sprintf("Timelines are drawn for the %d fights with the most handoffs; the %d others are in the table.", maxDrawn, len(r.Fights)-maxDrawn))
			break
		}
		w.Rawf("<section class=\"finding\" id=\"%s\" data-kind=\"fight\" data-object=\"%s\" data-handoffs=\"%d\">\n<h3>%s</h3>\n", fightID(f), hr.Esc(f.Object.String()), f.Handoffs, hr.Esc(f.Object.String()))
		w.Rawf("<p>%s and %s took the object from each other %d times between %s and %s.", hr.Esc(withManager(f.ActorA, f.FieldManagerA)),
			hr.Esc(withManager(f.ActorB, f.FieldManagerB)), f.Handoffs, hr.Esc(hr.Stamp(f.First)), hr.Esc(hr.Stamp(f.Last)))
		if f.MutatingWebhook != "" {
			w.Rawf(" The mutating webhook %s changed the writes of %s: it may be what the other side undoes.", hr.Esc(f.MutatingWebhook), hr.Esc(f.MutatedActor))
		}
		w.Raw("</p>\n")
		agents := map[string]string{f.ActorA: f.UserAgentA, f.ActorB: f.UserAgentB}
		managers := map[string]string{f.ActorA: f.FieldManagerA, f.ActorB: f.FieldManagerB}
		r.drawTimeline(w, fightID(f), r.timelineOf(track.KindFight, f.Object, f.ActorA+"\x00"+f.ActorB), f.First, f.Last, managers, agents)
		w.Raw("</section>\n")
	}
	w.Raw("</section>\n")
}

func (r *Report) htmlHot(w *hr.Writer) {
	w.Raw("<section id=\"hot\" aria-labelledby=\"hot-h\">\n")
	w.Rawf("<h2 id=\"hot-h\">Hot objects (%d)</h2>\n<p>One actor rewriting one object faster than the threshold; field manager in brackets.</p>\n", len(r.HotObjects))
	rows := make([][]hr.Cell, 0, len(r.HotObjects))
	for _, h := range r.HotObjects {
		rows = append(rows, []hr.Cell{{Text: h.Object.String(), HTML: link(hotID(h), h.Object.String())}, hr.T(withManager(h.Actor, h.FieldManager)),
			hr.N(h.Writes), hr.F(fmt.Sprintf("%.1f", h.WritesPerSecond()), h.WritesPerSecond()), hr.Time(h.First), hr.Time(h.Last),
			spanCell(h.First, h.Last), hr.T(webhook(h.MutatingWebhook, ""))})
	}
	if len(rows) > 0 {
		w.Table("hot-table", "Hot objects", []hr.Column{{Name: "Object"}, {Name: "Actor"}, {Name: "Writes", Numeric: true}, {Name: "Writes/s", Numeric: true},
			{Name: "First"}, {Name: "Last"}, {Name: "Span (s)", Numeric: true}, {Name: "Mutating webhook"}}, rows, maxTableRows)
	}
	for i, h := range r.rankedHot() {
		if i == maxDrawn {
			w.Note(fmt.Sprintf("Timelines are drawn for the %d hot objects written fastest; the %d others are in the table.", maxDrawn, len(r.HotObjects)-maxDrawn))
			break
		}
		w.Rawf("<section class=\"finding\" id=\"%s\" data-kind=\"hot\" data-object=\"%s\" data-writes=\"%d\">\n<h3>%s</h3>\n", hotID(h), hr.Esc(h.Object.String()), h.Writes, hr.Esc(h.Object.String()))
		w.Rawf("<p>%s wrote it %d times between %s and %s (%.1f/s).", hr.Esc(withManager(h.Actor, h.FieldManager)), h.Writes,
			hr.Esc(hr.Stamp(h.First)), hr.Esc(hr.Stamp(h.Last)), h.WritesPerSecond())
		if h.MutatingWebhook != "" {
			w.Rawf(" The mutating webhook %s changed its writes: a controller that writes back what a webhook rewrites loops with it.", hr.Esc(h.MutatingWebhook))
		}
		w.Raw("</p>\n")
		r.drawTimeline(w, hotID(h), r.timelineOf(track.KindHot, h.Object, h.Actor), h.First, h.Last,
			map[string]string{h.Actor: h.FieldManager}, map[string]string{h.Actor: h.UserAgent})
		w.Raw("</section>\n")
	}
	w.Raw("</section>\n")
}

func (r *Report) htmlRaces(w *hr.Writer) {
	w.Raw("<section id=\"races\" aria-labelledby=\"races-h\">\n")
	w.Rawf("<h2 id=\"races-h\">Replica races (%d)</h2>\n<p>One object written by several pods of one actor.</p>\n", len(r.Races))
	rows := make([][]hr.Cell, 0, len(r.Races))
	for _, rc := range r.Races {
		rows = append(rows, []hr.Cell{{Text: rc.Object.String(), HTML: link(raceID(rc), rc.Object.String())}, hr.T(rc.Actor), hr.T(strings.Join(rc.Pods, ",")),
			hr.N(rc.Writes), hr.N(rc.Conflicts), hr.Time(rc.First), hr.Time(rc.Last), spanCell(rc.First, rc.Last)})
	}
	if len(rows) > 0 {
		w.Table("races-table", "Replica races", []hr.Column{{Name: "Object"}, {Name: "Actor"}, {Name: "Pods"}, {Name: "Writes", Numeric: true},
			{Name: "Conflicts", Numeric: true}, {Name: "First"}, {Name: "Last"}, {Name: "Span (s)", Numeric: true}}, rows, maxTableRows)
	}
	for i, rc := range r.rankedRaces() {
		if i == maxDrawn {
			w.Note(fmt.Sprintf("Timelines are drawn for the %d races with the most conflicts; the %d others are in the table.", maxDrawn, len(r.Races)-maxDrawn))
			break
		}
		w.Rawf("<section class=\"finding\" id=\"%s\" data-kind=\"race\" data-object=\"%s\" data-writes=\"%d\" data-conflicts=\"%d\">\n<h3>%s</h3>\n",
			raceID(rc), hr.Esc(rc.Object.String()), rc.Writes, rc.Conflicts, hr.Esc(rc.Object.String()))
		w.Rawf("<p>%d pods of %s wrote it %d times between %s and %s; %d writes were answered 409 Conflict.</p>\n", len(rc.Pods), hr.Esc(rc.Actor),
			rc.Writes, hr.Esc(hr.Stamp(rc.First)), hr.Esc(hr.Stamp(rc.Last)), rc.Conflicts)
		r.drawTimeline(w, raceID(rc), r.timelineOf(track.KindRace, rc.Object, rc.Actor), rc.First, rc.Last, nil, nil)
		w.Raw("</section>\n")
	}
	w.Raw("</section>\n")
}

func link(id, text string) string { return "<a href=\"#" + id + "\">" + hr.Esc(text) + "</a>" }

func spanCell(a, b time.Time) hr.Cell {
	d := b.Sub(a).Seconds()
	return hr.F(fmt.Sprintf("%.1f", d), d)
}

// drawTimeline draws a finding's writes, one lane per actor or pod, and the lanes' numbers as a
// table (the chart's text alternative, and what each side wrote: verbs, conflicts, writes a
// mutating webhook changed).
func (r *Report) drawTimeline(w *hr.Writer, id string, tl *timeline, first, last time.Time, managers, agents map[string]string) {
	if tl == nil {
		if r.rec == nil {
			w.Raw("<p class=\"muted\">No timeline: the report was made without one.</p>\n")
		} else {
			w.Raw("<p class=\"muted\">No timeline: it is beyond the findings whose writes the report keeps.</p>\n")
		}
		return
	}
	const width, left, right, laneH, top = 940.0, 260.0, 14.0, 30.0, 14.0
	from, to := first, last
	for _, ln := range tl.lanes {
		if ln.stats.writes > 0 {
			if f := time.Unix(0, ln.stats.first); f.Before(from) {
				from = f
			}
			if l := time.Unix(0, ln.stats.last); l.After(to) {
				to = l
			}
		}
	}
	pad := max(to.Sub(from)/30, 500*time.Millisecond)
	s := hr.TimeScale{From: from.Add(-pad), To: to.Add(pad), X0: left, X1: width - right}
	height := top + float64(len(tl.lanes))*laneH + 24
	kind := map[track.FindingKind]string{track.KindFight: "fight", track.KindHot: "hot object", track.KindRace: "replica race"}[tl.kind]
	w.Rawf("<figure class=\"timeline\" data-bucketed=\"%t\" data-handoffs=\"%d\">\n<svg role=\"img\" aria-labelledby=\"%s-t %s-d\" viewBox=\"0 0 %s %s\" width=\"%s\" height=\"%s\">",
		tl.bucketed, tl.handoffs, id, id, hr.Num(width), hr.Coord(height), hr.Num(width), hr.Coord(height))
	w.Rawf("<title id=\"%s-t\">Writes of the %s on %s, one lane per %s</title>", id, kind, hr.Esc(tl.ref.String()), map[bool]string{true: "pod", false: "actor"}[tl.kind == track.KindRace])
	w.Rawf("<rect class=\"span\" x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\"><title>the %s: %s to %s</title></rect>",
		hr.Coord(s.X(first)), hr.Coord(top-6), hr.Coord(max(s.X(last)-s.X(first), 1)), hr.Coord(float64(len(tl.lanes))*laneH+6), kind, hr.Esc(hr.Stamp(first)), hr.Esc(hr.Stamp(last)))
	y := func(l int) float64 { return top + float64(l)*laneH + laneH/2 }
	var desc []string
	for i, ln := range tl.lanes {
		label := ln.name
		if m := managers[ln.name]; m != "" {
			label = withManager(label, m)
		}
		// The table under the chart names the lane in full.
		short := strings.TrimPrefix(label, "system:serviceaccount:")
		if len(short) > 42 {
			short = "…" + short[len(short)-41:]
		}
		w.Rawf("<g class=\"lane\" data-lane=\"%s\" data-writes=\"%d\" data-conflicts=\"%d\"><rect class=\"lane-bg\" x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\"/><text x=\"%s\" y=\"%s\" text-anchor=\"end\">%s</text>",
			hr.Esc(ln.name), ln.stats.writes, ln.stats.conflicts, hr.Coord(left), hr.Coord(y(i)-laneH/2+2), hr.Coord(width-right-left), hr.Coord(laneH-4),
			hr.Coord(left-8), hr.Coord(y(i)+4), hr.Esc(short))
		if tl.bucketed {
			peak := uint32(0)
			for _, c := range ln.counts {
				peak = max(peak, c)
			}
			bw := (s.X(time.Unix(0, tl.axis.start+tl.axis.width)) - s.X(time.Unix(0, tl.axis.start)))
			for j, c := range ln.counts {
				if c == 0 {
					continue
				}
				h := 4 + float64(c)/float64(peak)*(laneH-8)
				x := s.X(time.Unix(0, tl.axis.start+int64(j)*tl.axis.width))
				w.Rawf("<rect class=\"b l%d\" data-n=\"%d\" data-c=\"%d\" x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\"/>", i%4, c, ln.conflictCounts[j],
					hr.Coord(x), hr.Coord(y(i)+laneH/2-2-h), hr.Coord(max(bw-0.4, 0.8)), hr.Coord(h))
			}
		}
		w.Raw("</g>\n")
		d := fmt.Sprintf("%s: %d writes", label, ln.stats.writes)
		if ln.stats.conflicts > 0 {
			d += fmt.Sprintf(" (%d answered 409)", ln.stats.conflicts)
		}
		if ln.stats.writes > 0 {
			d += fmt.Sprintf(" from %s to %s", hr.Stamp(time.Unix(0, ln.stats.first)), hr.Stamp(time.Unix(0, ln.stats.last)))
		}
		desc = append(desc, d)
	}
	if !tl.bucketed {
		// Marks are drawn lane by lane in time order, after the lanes, so each lane's marks are
		// the elements of class m with its lane's class.
		prevLane := -1
		for _, m := range tl.marks {
			x := hr.Coord(s.X(time.Unix(0, m.nanos)))
			l := int(m.lane)
			if m.flags&flagHandoff != 0 && prevLane >= 0 && prevLane != l {
				w.Rawf("<line class=\"hand\" x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\"/>", x, hr.Coord(y(prevLane)), x, hr.Coord(y(l)))
			} else if m.flags&flagHandoff != 0 {
				w.Rawf("<line class=\"hand\" x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\"/>", x, hr.Coord(y(1-l)), x, hr.Coord(y(l)))
			}
			if m.flags&flagConflict != 0 {
				w.Rawf("<use class=\"m cf\" data-lane=\"%d\" href=\"#kx\" x=\"%s\" y=\"%s\"/>", l, x, hr.Coord(y(l)))
			} else {
				w.Rawf("<use class=\"m l%d\" data-lane=\"%d\" href=\"#k%d\" x=\"%s\" y=\"%s\"/>", l%4, l, l%4, x, hr.Coord(y(l)))
			}
			if m.flags&flagMutated != 0 {
				w.Rawf("<use class=\"wh l%d\" href=\"#kw\" x=\"%s\" y=\"%s\"/>", l%4, x, hr.Coord(y(l)))
			}
			prevLane = l
		}
	}
	w.Axis(s, top+float64(len(tl.lanes))*laneH, top-6)
	if tl.kind == track.KindFight {
		desc = append(desc, fmt.Sprintf("%d handoffs", tl.handoffs))
	}
	w.Rawf("<desc id=\"%s-d\">%s</desc></svg>\n<figcaption>", id, hr.Esc(strings.Join(desc, "; ")+"."))
	switch {
	case tl.bucketed:
		w.Rawf("More than %d writes: each bar counts the lane's writes in %s (its height is relative to the lane's busiest bar); the table gives the exact counts.",
			maxExactMarks, hr.Esc(hr.Duration(time.Duration(tl.axis.width))))
	case tl.kind == track.KindFight:
		w.Raw("Each mark is one write at its time, each lane with its own shape; a dashed line joins the lanes at each handoff.")
	default:
		w.Raw("Each mark is one write at its time, each lane with its own shape; a cross is a write answered 409 Conflict.")
	}
	w.Raw(" A small triangle above a mark: a mutating webhook changed that write. Shaded: the finding's span.</figcaption>\n</figure>\n")
	if tl.missing != 0 {
		n := "Some"
		if tl.missing > 0 {
			n = fmt.Sprint(tl.missing)
		}
		w.Note(fmt.Sprintf("%s of the first writes of this finding are not drawn: they were more than %d writes back in the log when it was found.", n, len(r.rec.ring)))
	}
	if tl.maxLanesReached {
		w.Note(fmt.Sprintf("Pods beyond the first %d share the lane \"other pods\".", maxRaceLanes))
	}
	rows := make([][]hr.Cell, 0, len(tl.lanes))
	for _, ln := range tl.lanes {
		var vs []string
		for i, n := range ln.stats.verbs {
			if n > 0 {
				vs = append(vs, fmt.Sprintf("%s=%d", verbs[i], n))
			}
		}
		firstAt, lastAt := hr.T("-"), hr.T("-")
		if ln.stats.writes > 0 {
			firstAt, lastAt = hr.Time(time.Unix(0, ln.stats.first)), hr.Time(time.Unix(0, ln.stats.last))
		}
		who := ln.name
		if a := agents[ln.name]; a != "" {
			who += " (" + a + ")"
		}
		rows = append(rows, []hr.Cell{hr.T(who), hr.T(orDefault(managers[ln.name], "-")), hr.N(ln.stats.writes), hr.N(ln.stats.conflicts),
			hr.T(strings.Join(vs, " ")), hr.N(ln.stats.mutated), firstAt, lastAt})
	}
	lane := "Actor (user agent)"
	if tl.kind == track.KindRace {
		lane = "Pod"
	}
	w.Table(id+"-lanes", "Writes by lane", []hr.Column{{Name: lane}, {Name: "Field manager"}, {Name: "Writes", Numeric: true}, {Name: "Answered 409", Numeric: true},
		{Name: "Verbs"}, {Name: "Changed by a mutating webhook", Numeric: true}, {Name: "First"}, {Name: "Last"}}, rows, maxRaceLanes+1)
}

func (r *Report) htmlTables(w *hr.Writer) {
	w.Rawf("<section id=\"conflicts\" aria-labelledby=\"conflicts-h\">\n<h2 id=\"conflicts-h\">Conflicts (%d actors)</h2>\n<p>Writes answered 409 Conflict.</p>\n", len(r.Conflicts))
	if len(r.Conflicts) > 0 {
		rows := make([][]hr.Cell, 0, len(r.Conflicts))
		for _, c := range r.Conflicts {
			rows = append(rows, []hr.Cell{hr.T(c.Actor), hr.N(c.Conflicts), hr.T(sortedCounts(c.Resources))})
		}
		w.Table("conflicts-table", "Conflicts", []hr.Column{{Name: "Actor"}, {Name: "Conflicts", Numeric: true}, {Name: "Resources"}}, rows, maxTableRows)
	}
	w.Raw("</section>\n")
	w.Rawf("<section id=\"writers\" aria-labelledby=\"writers-h\">\n<h2 id=\"writers-h\">Top writers (%d of %d)</h2>\n", len(r.TopWriters), len(r.actors))
	if len(r.TopWriters) > 0 {
		rows := make([][]hr.Cell, 0, len(r.TopWriters))
		for _, wr := range r.TopWriters {
			rows = append(rows, []hr.Cell{hr.T(wr.Actor), hr.N(wr.Writes), hr.N(wr.Failed), hr.N(wr.Conflicts), hr.T(sortedCounts(wr.Verbs))})
		}
		w.Table("writers-table", "Top writers", []hr.Column{{Name: "Actor"}, {Name: "Writes", Numeric: true}, {Name: "Failed", Numeric: true},
			{Name: "Conflicts", Numeric: true}, {Name: "Verbs"}}, rows, maxTableRows)
	}
	w.Raw("</section>\n")
	w.Rawf("<section id=\"readers\" aria-labelledby=\"readers-h\">\n<h2 id=\"readers-h\">Top readers (%d)</h2>\n<p>List and watch requests; initial lists are lists, and watches with sendInitialEvents=true (relist storms).</p>\n", len(r.TopReaders))
	if len(r.TopReaders) > 0 {
		rows := make([][]hr.Cell, 0, len(r.TopReaders))
		for _, rd := range r.TopReaders {
			rows = append(rows, []hr.Cell{hr.T(rd.Actor), hr.N(rd.InitialLists), hr.N(rd.Lists), hr.N(rd.Watch)})
		}
		w.Table("readers-table", "Top readers", []hr.Column{{Name: "Actor"}, {Name: "Initial lists", Numeric: true}, {Name: "Lists", Numeric: true},
			{Name: "Watches", Numeric: true}}, rows, maxTableRows)
	}
	w.Raw("</section>\n<section id=\"input\" aria-labelledby=\"input-h\">\n<h2 id=\"input-h\">What was read</h2>\n")
	w.Rawf("<p>%d events counted, %d repeats dropped (overlapping logs, retried batches), %d lines skipped.</p>\n", r.Events, r.Duplicates, r.Skipped.Lines)
	if len(r.Forms) > 0 {
		rows := make([][]hr.Cell, 0, len(r.Forms))
		for f, n := range r.Forms {
			rows = append(rows, []hr.Cell{hr.T(f), hr.N(n)})
		}
		slices.SortFunc(rows, func(a, b []hr.Cell) int { return strings.Compare(a[0].Text, b[0].Text) })
		w.Table("forms-table", "Forms read", []hr.Column{{Name: "Read as"}, {Name: "Lines", Numeric: true}}, rows, maxTableRows)
	}
	if sk := r.Skipped; sk.Lines > 0 {
		var rows [][]hr.Cell
		for _, c := range []struct {
			n    int
			what string
		}{
			{sk.Malformed, "malformed"}, {sk.TooLong, "too long"},
			{sk.NotAuditEvents, "not audit events (another format, such as a cloud provider's log entry)"},
			{sk.TooManyEvents, "event lists over the event limit"}, {sk.Unattributable, "events without a verb or user"},
			{sk.Unmappable, "cloud audit log entries that cannot be mapped"}, {sk.Truncated, "events truncated by CloudWatch Logs"},
		} {
			if c.n > 0 {
				rows = append(rows, []hr.Cell{hr.T(c.what), hr.N(c.n)})
			}
		}
		w.Table("skipped-table", "Skipped lines", []hr.Column{{Name: "Reason"}, {Name: "Lines", Numeric: true}}, rows, maxTableRows)
		lines := make([]string, len(sk.FirstLines))
		for i, n := range sk.FirstLines {
			lines[i] = fmt.Sprint(n)
		}
		w.Rawf("<p>First skipped lines: %s.</p>\n", hr.Esc(strings.Join(lines, ", ")))
	}
	w.Raw("</section>\n")
}
