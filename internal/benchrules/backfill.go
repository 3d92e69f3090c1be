package benchrules

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"
)

// Block ranges of a Prometheus with the default 15d retention: the head cuts 2h blocks and
// compaction merges them into 6h and then 18h blocks (ranges 2h×3^n up to a tenth of the
// retention). The backfill lays out its blocks the same way, so a query over three days opens
// as many blocks as it would in production.
var blockRanges = []time.Duration{18 * time.Hour, 6 * time.Hour, 2 * time.Hour}

// blockLayout splits [from, to) into blocks: the oldest in 18h-aligned ranges, then 6h, then 2h,
// and what a running Prometheus would still hold in its head as one last block.
func blockLayout(from, to int64) [][2]int64 {
	var out [][2]int64
	for t := from; t < to; {
		end := to
		for _, r := range blockRanges {
			rm := r.Milliseconds()
			next := (t/rm + 1) * rm
			if next <= to/rm*rm {
				end = next
				break
			}
		}
		out = append(out, [2]int64{t, end})
		t = end
	}
	return out
}

// BackfillStats describes a backfill.
type BackfillStats struct {
	// From and To bound the history.
	From, To time.Time
	Blocks   int
	Series   int
	Samples  uint64
	Bytes    int64
	// RecordedRules are the recording rules whose history was computed, in evaluation order.
	RecordedRules []string
	// RecordDuration is the time spent computing them, WriteDuration writing the blocks.
	RecordDuration, WriteDuration time.Duration
}

// Backfill writes the fleet's history over [from, to) into dir as TSDB blocks: every scraped
// series at its target's scrape grid, up, and the recording rules of rf whose output is read
// over a range, computed by the PromQL engine from that history. It then writes the time the
// backfill itself took as one more block, repeating until the history ends less than a scrape
// interval before now, so the live scrapes continue it without a gap.
func Backfill(ctx context.Context, f *Fleet, rf *ruleFile, dir string, from time.Time, workers int, logf func(string, ...any)) (BackfillStats, error) {
	stats := BackfillStats{From: from}
	rules, err := rf.rangeReadRecordings()
	if err != nil {
		return stats, err
	}
	for _, r := range rules {
		stats.RecordedRules = append(stats.RecordedRules, r.group+"/"+r.record)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return stats, fmt.Errorf("create data directory: %w", err)
	}
	engine := newEngine()
	to := time.Now().Truncate(time.Second)
	h := newHistory(f, from, to)
	for start := from.UnixMilli(); ; {
		end := h.to
		t0 := time.Now()
		if err := h.record(ctx, engine, rules, start, end); err != nil {
			return stats, err
		}
		stats.RecordDuration += time.Since(t0)
		t0 = time.Now()
		layout := blockLayout(start, end)
		logf("writing %d block(s) for [%s, %s) with %d workers", len(layout), time.UnixMilli(start).UTC().Format(time.RFC3339), time.UnixMilli(end).UTC().Format(time.RFC3339), workers)
		if err := writeBlocks(ctx, dir, h, layout, workers, &stats); err != nil {
			return stats, err
		}
		stats.WriteDuration += time.Since(t0)
		stats.To = time.UnixMilli(end)
		now := time.Now().Truncate(time.Second)
		if now.Sub(stats.To) < f.Config.ScrapeInterval {
			break
		}
		start = end
		h.to = now.UnixMilli()
	}
	stats.Series = len(h.series)
	size, err := dirSize(dir)
	if err != nil {
		return stats, err
	}
	stats.Bytes = size
	return stats, nil
}

// writeBlocks writes the blocks of layout with up to workers at once, largest first.
func writeBlocks(ctx context.Context, dir string, h *history, layout [][2]int64, workers int, stats *BackfillStats) error {
	symbols := symbolsOf(h.series)
	sort.Slice(layout, func(i, j int) bool { return layout[i][1]-layout[i][0] > layout[j][1]-layout[j][0] })
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
		next  = make(chan [2]int64)
	)
	for range max(1, workers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range next {
				meta, err := writeBlock(ctx, dir, h, symbols, r[0], r[1])
				mu.Lock()
				if err != nil && first == nil {
					first = fmt.Errorf("block [%d, %d): %w", r[0], r[1], err)
					cancel()
				}
				if err == nil {
					stats.Blocks++
					stats.Samples += meta.Stats.NumSamples
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for _, r := range layout {
		select {
		case next <- r:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if !info.IsDir() {
			n += info.Size()
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("measure data directory: %w", err)
	}
	return n, nil
}
