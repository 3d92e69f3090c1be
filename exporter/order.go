package exporter

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/loopwatch/loopwatch/catalogue"
	"github.com/loopwatch/loopwatch/exporter/track"
)

// Reasons of loopwatch_audit_out_of_order_writes_total.
const (
	ReasonLate     = "late"
	ReasonOverflow = "overflow"
)

// ReleaseInterval is how often a serving exporter takes the writes whose reorder wait is over
// through the detections when no batch comes to do it.
const ReleaseInterval = time.Second

// orderCollector exposes the reorder buffer's state from the tracker's stats at scrape time.
type orderCollector struct {
	tracker func() *track.Tracker
}

var (
	waitingDesc    = desc(catalogue.AuditWaitingWrites)
	outOfOrderDesc = desc(catalogue.AuditOutOfOrderWritesTotal)
)

func (c *orderCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- waitingDesc
	ch <- outOfOrderDesc
}

func (c *orderCollector) Collect(ch chan<- prometheus.Metric) {
	t := c.tracker()
	if t == nil {
		return
	}
	s := t.Stats()
	ch <- prometheus.MustNewConstMetric(waitingDesc, prometheus.GaugeValue, float64(s.Waiting))
	ch <- prometheus.MustNewConstMetric(outOfOrderDesc, prometheus.CounterValue, float64(s.Late), ReasonLate)
	ch <- prometheus.MustNewConstMetric(outOfOrderDesc, prometheus.CounterValue, float64(s.Overflow), ReasonOverflow)
}

// Release takes the writes whose reorder wait is over through the detections. A leader replica
// streams the step; a standby takes writes when its leader's stream says.
func (e *Exporter) Release() {
	if e.repl != nil {
		e.releaseStep()
		return
	}
	e.tracker.Release()
}

// releaseEvery calls Release every interval until ctx is done, so that the last writes before a
// quiet spell are not left waiting for the next batch.
func (e *Exporter) releaseEvery(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			e.Release()
		}
	}
}
