package exporter

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/loopwatch/loopwatch/exporter/decode"
	"github.com/loopwatch/loopwatch/exporter/dedupe"
	"github.com/loopwatch/loopwatch/exporter/managed"
)

// Memory is the exporter's memory bound for a configuration, part by part: the most heap it
// holds whatever it is sent, because every buffer, table and label set is bounded by a setting.
// The README's "Bounds" section explains each term.
type Memory struct {
	Dedupe      int64 // two generations of DedupeSize keys
	Tracker     int64 // object table and handoff times, actor candidates and labels, names, offenders
	Reorder     int64 // writes waiting for their turn in event-time order
	Bodies      int64 // bodies being received or processed, and the pooled buffers they return to
	Decoders    int64 // one decoder per processing slot (file ingest's is gone before serving starts)
	Series      int64 // the per-actor families' series
	Connections int64 // goroutines and TLS, HTTP/1 and HTTP/2 buffers of the open connections
	Sources     int64 // the managed-cluster sources' decoders, one per processing slot (when served)
	Replication int64 // a leader's queues to its standbys, a standby's frame buffer (with --leader-elect)
}

// Total is the sum of the parts.
func (m Memory) Total() int64 {
	return m.Dedupe + m.Tracker + m.Reorder + m.Bodies + m.Decoders + m.Series + m.Connections + m.Sources + m.Replication
}

// connectionBytes is what one open connection may hold: its goroutine and TLS record buffers,
// the HTTP/1 reader and writer or the HTTP/2 receive window, and up to maxStreams handler
// goroutines (their bodies are in Bodies).
func connectionBytes() int64 {
	return 64<<10 + http2ReceiveWindow + http2MaxStreams*16<<10
}

// seriesBytes is what one series of a per-actor family costs in client_golang (its labels, the
// metric, the map entries) and in the label caches, with label values of maxValueBytes.
func seriesBytes(maxValueBytes int) int64 {
	return 5*int64(maxValueBytes+16) + 512
}

// perActorFamilies are the families bounded by MaxSeries: writes, conflicts, handoffs, reads and
// initial lists.
const perActorFamilies = 5

// MemoryBound returns the memory bound of an exporter and server with these configurations
// (defaults filled as New and NewServer fill them).
func MemoryBound(ec Config, sc ServerConfig) (Memory, error) {
	ec, sc = ec.withDefaults(), sc.withDefaults()
	tracker, err := ec.Tracker.MemoryBound(ec.MaxValueBytes)
	if err != nil {
		return Memory{}, err
	}
	reorder, err := ec.Tracker.ReorderMemoryBound()
	if err != nil {
		return Memory{}, err
	}
	limits := decode.Limits{MaxValueBytes: ec.MaxValueBytes, MaxEvents: ec.MaxBatchEvents}
	m := Memory{
		Dedupe:      dedupe.Bytes(ec.DedupeSize),
		Tracker:     tracker - reorder,
		Reorder:     reorder,
		Bodies:      2 * sc.MaxBufferedBytes,
		Decoders:    int64(sc.MaxInFlight) * decode.MemoryBound(0, limits, sc.MaxBodyBytes),
		Series:      perActorFamilies * int64(ec.MaxSeries+25) * seriesBytes(ec.MaxValueBytes),
		Connections: int64(sc.MaxConnections) * connectionBytes(),
	}
	if ec.Replicas {
		// A leader's standbys share the frames queued for them: at most a queue's bound and one
		// frame (a batch and its increments) beyond it, the largest standby's. A standby reads one
		// frame at a time, through a 64 KiB buffer.
		frame := sc.MaxBodyBytes + int64(frameOverhead(ec.MaxBatchEvents))
		m.Replication = DefaultMaxStandbyQueueBytes + frame + frame + 64<<10
	}
	if sc.Firehose != nil || sc.PubSub != nil {
		m.Sources = int64(sc.MaxInFlight) * managed.MemoryBound(managed.Limits{MaxValueBytes: ec.MaxValueBytes}, sc.MaxBodyBytes)
	}
	return m, nil
}

// WriteTo writes the bound as a table, in MiB.
func (m Memory) WriteTo(w io.Writer) (int64, error) {
	cw := &countingWriter{w: w}
	tw := tabwriter.NewWriter(cw, 0, 0, 2, ' ', tabwriter.AlignRight)
	mib := func(b int64) string { return fmt.Sprintf("%.1f", float64(b)/(1<<20)) }
	for _, row := range []struct {
		what string
		n    int64
	}{
		{"dedupe", m.Dedupe}, {"tracker", m.Tracker}, {"reorder", m.Reorder}, {"bodies", m.Bodies}, {"decoders", m.Decoders},
		{"series", m.Series}, {"connections", m.Connections}, {"sources", m.Sources}, {"replication", m.Replication}, {"total", m.Total()},
	} {
		fmt.Fprintf(tw, "%s\t%s MiB\t\n", row.what, mib(row.n))
	}
	err := tw.Flush()
	return cw.n, err
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
