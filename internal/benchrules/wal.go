package benchrules

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/tsdb/record"
	"github.com/prometheus/prometheus/tsdb/wlog"
	"github.com/prometheus/prometheus/util/compression"
)

// walWindow is how much history one pass over the series writes to the write-ahead log: the
// log holds each series' samples in time order, and Prometheus replays it window by window.
const walWindow int64 = 15 * 60 * 1000

// walRecordEntries bounds the series or samples of one record, so no record holds the whole
// history.
const walRecordEntries = 10000

// headLog writes the newest part of the history into the data directory's write-ahead log
// (wal/), where a running Prometheus keeps what its head holds: started on the directory, it
// replays the log into its head, as after a restart. The history it covers then reads from the
// head, as on a Prometheus that has been running for that long, and only what lies before it
// from blocks.
type headLog struct {
	w       *wlog.WL
	enc     record.Encoder
	refs    map[*storedSeries]chunks.HeadSeriesRef
	buf     []byte
	samples []record.RefSample
	// Samples counts the samples written.
	Samples uint64
}

func openHeadLog(dataDir string) (*headLog, error) {
	w, err := wlog.New(nil, nil, filepath.Join(dataDir, "wal"), compression.Snappy)
	if err != nil {
		return nil, fmt.Errorf("open write-ahead log: %w", err)
	}
	return &headLog{w: w, refs: map[*storedSeries]chunks.HeadSeriesRef{}}, nil
}

// write logs the history's samples in [mint, maxt), window by window. A series not logged
// before is declared first, as Prometheus logs a series before its first sample.
func (l *headLog) write(ctx context.Context, h *history, mint, maxt int64) error {
	var fresh []record.RefSeries
	for _, s := range h.series {
		if _, ok := l.refs[s]; !ok {
			ref := chunks.HeadSeriesRef(len(l.refs) + 1)
			l.refs[s] = ref
			fresh = append(fresh, record.RefSeries{Ref: ref, Labels: s.labels})
		}
	}
	for i := 0; i < len(fresh); i += walRecordEntries {
		l.buf = l.enc.Series(fresh[i:min(i+walRecordEntries, len(fresh))], l.buf[:0])
		if err := l.w.Log(l.buf); err != nil {
			return fmt.Errorf("log series: %w", err)
		}
	}
	var (
		cache curveCache
		ts    []int64
		vs    []float64
	)
	for from := mint; from < maxt; from += walWindow {
		to := min(from+walWindow, maxt)
		for _, s := range h.series {
			if err := ctx.Err(); err != nil {
				return err
			}
			ts, vs = s.samples(h, from, to, &cache, ts, vs)
			for i, t := range ts {
				l.samples = append(l.samples, record.RefSample{Ref: l.refs[s], T: t, V: vs[i]})
			}
			if len(l.samples) >= walRecordEntries {
				if err := l.flush(); err != nil {
					return err
				}
			}
		}
	}
	return l.flush()
}

func (l *headLog) flush() error {
	if len(l.samples) == 0 {
		return nil
	}
	l.buf = l.enc.Samples(l.samples, l.buf[:0])
	if err := l.w.Log(l.buf); err != nil {
		return fmt.Errorf("log samples: %w", err)
	}
	l.Samples += uint64(len(l.samples))
	l.samples = l.samples[:0]
	return nil
}

func (l *headLog) close() error {
	if err := l.w.Close(); err != nil {
		return fmt.Errorf("close write-ahead log: %w", err)
	}
	return nil
}
