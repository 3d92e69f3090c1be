package analyze

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteJSON writes the report as indented JSON (deterministic: slices are sorted, maps are
// written in key order by encoding/json).
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("write json report: %w", err)
	}
	return nil
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

func span(a, b time.Time) string {
	return fmt.Sprintf("%s .. %s (%s)", stamp(a), stamp(b), b.Sub(a).Round(time.Millisecond))
}

func sortedCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}

// withManager renders an actor with the field manager it writes under.
func withManager(actor, manager string) string {
	if manager == "" {
		return actor
	}
	return actor + " [" + manager + "]"
}

// webhook renders the mutating webhook that changed an offender's writes (and whose), or "-".
func webhook(name, actor string) string {
	switch {
	case name == "":
		return "-"
	case actor == "":
		return name
	}
	return name + " (writes of " + actor + ")"
}

// WriteText writes the report for a human reader.
func (r *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	p := func(format string, args ...any) { fmt.Fprintf(tw, format, args...) }
	p("Audit events: %d counted (%d writes, %d reads), %d repeats dropped, %d lines skipped\n", r.Events, r.Writes, r.Reads, r.Duplicates, r.Skipped.Lines)
	if r.Events > 0 {
		p("Time span: %s\n", span(r.First, r.Last))
	}
	if len(r.Forms) > 0 {
		forms := make([]string, 0, len(r.Forms))
		for f, n := range r.Forms {
			forms = append(forms, fmt.Sprintf("%s (%d)", f, n))
		}
		sort.Strings(forms)
		p("Read as: %s\n", strings.Join(forms, ", "))
	}
	if sk := r.Skipped; sk.Lines > 0 {
		var why []string
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
				why = append(why, fmt.Sprintf("%d %s", c.n, c.what))
			}
		}
		lines := make([]string, len(sk.FirstLines))
		for i, n := range sk.FirstLines {
			lines[i] = fmt.Sprint(n)
		}
		more := ""
		if sk.Lines > len(sk.FirstLines) {
			more = ", …"
		}
		p("Skipped lines: %s (first: line %s%s)\n", strings.Join(why, ", "), strings.Join(lines, ", "), more)
	}

	p("\nFights (%d): one object written alternately by two actors (field managers in brackets)\n", len(r.Fights))
	if len(r.Fights) > 0 {
		p("  OBJECT\tACTOR A\tACTOR B\tHANDOFFS\tSPAN\tMUTATING WEBHOOK\n")
	}
	for _, f := range r.Fights {
		p("  %s\t%s\t%s\t%d\t%s\t%s\n", f.Object, withManager(f.ActorA, f.FieldManagerA), withManager(f.ActorB, f.FieldManagerB),
			f.Handoffs, span(f.First, f.Last), webhook(f.MutatingWebhook, f.MutatedActor))
	}

	p("\nHot objects (%d): one actor rewriting one object faster than the threshold (field manager in brackets)\n", len(r.HotObjects))
	if len(r.HotObjects) > 0 {
		p("  OBJECT\tACTOR\tWRITES\tWRITES/S\tSPAN\tMUTATING WEBHOOK\n")
	}
	for _, h := range r.HotObjects {
		p("  %s\t%s\t%d\t%.1f\t%s\t%s\n", h.Object, withManager(h.Actor, h.FieldManager), h.Writes, h.WritesPerSecond(),
			span(h.First, h.Last), webhook(h.MutatingWebhook, ""))
	}

	p("\nReplica races (%d): one object written by several pods of one actor\n", len(r.Races))
	if len(r.Races) > 0 {
		p("  OBJECT\tACTOR\tPODS\tWRITES\tCONFLICTS\tSPAN\n")
	}
	for _, rc := range r.Races {
		p("  %s\t%s\t%s\t%d\t%d\t%s\n", rc.Object, rc.Actor, strings.Join(rc.Pods, ","), rc.Writes, rc.Conflicts, span(rc.First, rc.Last))
	}

	p("\nConflicts (%d actors): writes answered 409\n", len(r.Conflicts))
	if len(r.Conflicts) > 0 {
		p("  ACTOR\tCONFLICTS\tRESOURCES\n")
	}
	for _, c := range r.Conflicts {
		p("  %s\t%d\t%s\n", c.Actor, c.Conflicts, sortedCounts(c.Resources))
	}

	p("\nTop writers (%d)\n", len(r.TopWriters))
	if len(r.TopWriters) > 0 {
		p("  ACTOR\tWRITES\tFAILED\tCONFLICTS\tVERBS\n")
	}
	for _, wr := range r.TopWriters {
		p("  %s\t%d\t%d\t%d\t%s\n", wr.Actor, wr.Writes, wr.Failed, wr.Conflicts, sortedCounts(wr.Verbs))
	}

	if len(r.TopReaders) > 0 {
		p("\nTop readers (%d): list and watch requests; initial lists are lists and watches with sendInitialEvents=true (relist storms)\n", len(r.TopReaders))
		p("  ACTOR\tINITIAL LISTS\tLISTS\tWATCHES\n")
		for _, rd := range r.TopReaders {
			p("  %s\t%d\t%d\t%d\n", rd.Actor, rd.InitialLists, rd.Lists, rd.Watch)
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write text report: %w", err)
	}
	return nil
}
