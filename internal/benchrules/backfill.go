package benchrules

import (
	"context"
	"errors"
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
	// From and To bound the history; the blocks hold [From, BlocksTo), the write-ahead log
	// [BlocksTo, To) (BlocksTo is To when nothing went to the log).
	From, To time.Time
	BlocksTo time.Time
	Blocks   int
	Series   int
	// Samples counts the blocks' samples, HeadSamples the write-ahead log's.
	Samples     uint64
	HeadSamples uint64 `json:",omitempty"`
	Bytes       int64
	// RecordedRules are the recording rules whose history was computed, in evaluation order.
	RecordedRules []string
	// RecordDuration is the time spent computing them, WriteDuration writing the blocks and the log.
	RecordDuration, WriteDuration time.Duration
}

// Backfill writes the fleet's history over [from, to) into dir: its last head (a duration, 0
// for none) as the write-ahead log a running Prometheus replays into its head (see headLog), the
// rest as TSDB blocks. The history is every scraped series at its target's scrape grid, up, and
// the recording rules of rf whose output is read over a range, computed by the PromQL engine
// from that history. It then writes the time the backfill itself took too, repeating until the
// history ends less than a scrape interval before now, so the live scrapes continue it without
// a gap.
func Backfill(ctx context.Context, f *Fleet, rf *ruleFile, dir string, from time.Time, head time.Duration, workers int, logf func(string, ...any)) (_ BackfillStats, err error) {
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
	blocksTo := h.to
	var log *headLog
	if head > 0 {
		blocksTo = max(h.from, to.Add(-head).UnixMilli())
		if log, err = openHeadLog(dir); err != nil {
			return stats, err
		}
		defer func() {
			if log != nil { // not closed: an error return
				err = errors.Join(err, log.close())
			}
		}()
	}
	stats.BlocksTo = time.UnixMilli(blocksTo)
	for start := from.UnixMilli(); ; {
		end := h.to
		t0 := time.Now()
		if err := h.record(ctx, engine, rules, start, end); err != nil {
			return stats, err
		}
		stats.RecordDuration += time.Since(t0)
		t0 = time.Now()
		if blocksEnd := min(end, blocksTo); start < blocksEnd {
			layout := blockLayout(start, blocksEnd)
			logf("writing %d block(s) for [%s, %s) with %d workers", len(layout), rfc3339(start), rfc3339(blocksEnd), workers)
			if err := writeBlocks(ctx, dir, h, layout, workers, &stats); err != nil {
				return stats, err
			}
		}
		if logFrom := max(start, blocksTo); log != nil && logFrom < end {
			logf("writing [%s, %s) to the write-ahead log", rfc3339(logFrom), rfc3339(end))
			if err := log.write(ctx, h, logFrom, end); err != nil {
				return stats, err
			}
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
	if log == nil {
		stats.BlocksTo = stats.To
	} else {
		stats.HeadSamples = log.Samples
		err, log = log.close(), nil
		if err != nil {
			return stats, err
		}
	}
	stats.Series = len(h.series)
	size, err := dirSize(dir)
	if err != nil {
		return stats, err
	}
	stats.Bytes = size
	return stats, nil
}

func rfc3339(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339) }

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
