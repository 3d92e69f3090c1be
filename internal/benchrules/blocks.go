package benchrules

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/tsdb/index"
	"github.com/prometheus/prometheus/tsdb/tombstones"
)

// samplesPerChunk is where the head cuts a float chunk, so the blocks hold the chunks
// Prometheus' own compaction would have written.
const samplesPerChunk = 120

// blockMeta is meta.json of a TSDB block (format version 1), as tsdb.BlockMeta marshals it.
// Importing package tsdb for that type would pull Prometheus' whole configuration package (and
// its cloud SDKs) into this module; the format is stable and documented in
// prometheus/tsdb/docs/format/README.md.
type blockMeta struct {
	ULID       ulid.ULID       `json:"ulid"`
	MinTime    int64           `json:"minTime"`
	MaxTime    int64           `json:"maxTime"`
	Stats      blockStats      `json:"stats"`
	Compaction blockCompaction `json:"compaction"`
	Version    int             `json:"version"`
}

type blockStats struct {
	NumSamples      uint64 `json:"numSamples"`
	NumFloatSamples uint64 `json:"numFloatSamples"`
	NumSeries       uint64 `json:"numSeries"`
	NumChunks       uint64 `json:"numChunks"`
}

type blockCompaction struct {
	Level   int         `json:"level"`
	Sources []ulid.ULID `json:"sources"`
}

// writeBlock writes the history's samples in [mint, maxt) as one block under dir and returns
// its meta. The block is built in a temporary directory and renamed into place, so Prometheus
// never sees half a block.
func writeBlock(ctx context.Context, dir string, h *history, symbols []string, mint, maxt int64) (blockMeta, error) {
	id := ulid.MustNew(ulid.Timestamp(time.UnixMilli(mint)), rand.Reader)
	meta := blockMeta{ULID: id, Version: 1, Compaction: blockCompaction{Level: 1, Sources: []ulid.ULID{id}}}
	final := filepath.Join(dir, id.String())
	tmp := final + ".tmp-for-creation"
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return meta, fmt.Errorf("create block directory: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			_ = os.RemoveAll(tmp)
		}
	}()
	cw, err := chunks.NewWriter(filepath.Join(tmp, "chunks"))
	if err != nil {
		return meta, fmt.Errorf("open chunk writer: %w", err)
	}
	iw, err := index.NewWriter(ctx, filepath.Join(tmp, "index"))
	if err != nil {
		_ = cw.Close()
		return meta, fmt.Errorf("open index writer: %w", err)
	}
	closeAll := func() error { return errors.Join(cw.Close(), iw.Close()) }
	for _, s := range symbols {
		if err := iw.AddSymbol(s); err != nil {
			_ = closeAll()
			return meta, fmt.Errorf("add symbol: %w", err)
		}
	}
	var (
		cache         curveCache
		ts            []int64
		vs            []float64
		metas         []chunks.Meta
		ref           storage.SeriesRef
		minT, maxT    = int64(-1), int64(-1)
		samples, chks uint64
	)
	for _, s := range h.series {
		if err := ctx.Err(); err != nil {
			_ = closeAll()
			return meta, err
		}
		ts, vs = s.samples(h, mint, maxt, &cache, ts, vs)
		if len(ts) == 0 {
			continue
		}
		metas = metas[:0]
		for i := 0; i < len(ts); i += samplesPerChunk {
			j := min(i+samplesPerChunk, len(ts))
			c := chunkenc.NewXORChunk()
			app, err := c.Appender()
			if err != nil {
				_ = closeAll()
				return meta, fmt.Errorf("chunk appender: %w", err)
			}
			for k := i; k < j; k++ {
				app.Append(0, ts[k], vs[k])
			}
			metas = append(metas, chunks.Meta{Chunk: c, MinTime: ts[i], MaxTime: ts[j-1]})
		}
		if err := cw.WriteChunks(metas...); err != nil {
			_ = closeAll()
			return meta, fmt.Errorf("write chunks: %w", err)
		}
		for i := range metas {
			metas[i].Chunk = nil
		}
		if err := iw.AddSeries(ref, s.labels, metas...); err != nil {
			_ = closeAll()
			return meta, fmt.Errorf("add series %s: %w", s.labels, err)
		}
		ref++
		samples += uint64(len(ts))
		chks += uint64(len(metas))
		if minT < 0 || ts[0] < minT {
			minT = ts[0]
		}
		maxT = max(maxT, ts[len(ts)-1])
	}
	if err := closeAll(); err != nil {
		return meta, fmt.Errorf("close block writers: %w", err)
	}
	if ref == 0 {
		return meta, fmt.Errorf("block [%d, %d) would be empty", mint, maxt)
	}
	meta.MinTime, meta.MaxTime = minT, maxT+1
	meta.Stats = blockStats{NumSamples: samples, NumFloatSamples: samples, NumSeries: uint64(ref), NumChunks: chks}
	raw, err := json.MarshalIndent(meta, "", "\t")
	if err != nil {
		return meta, fmt.Errorf("encode block meta: %w", err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "meta.json"), raw, 0o644); err != nil {
		return meta, fmt.Errorf("write block meta: %w", err)
	}
	if _, err := tombstones.WriteFile(slog.New(slog.DiscardHandler), tmp, tombstones.NewMemTombstones()); err != nil {
		return meta, fmt.Errorf("write tombstones: %w", err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return meta, fmt.Errorf("move block into place: %w", err)
	}
	ok = true
	return meta, nil
}

// symbolsOf returns every label name and value of the series, sorted and unique: a block's
// symbol table (a superset of what one block needs is allowed).
func symbolsOf(series []*storedSeries) []string {
	seen := map[string]struct{}{}
	for _, s := range series {
		s.labels.Range(func(l labels.Label) {
			seen[l.Name] = struct{}{}
			seen[l.Value] = struct{}{}
		})
	}
	out := make([]string, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}
