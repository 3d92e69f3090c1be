package exporter

import (
	"sort"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/loopwatch/loopwatch/exporter/track"
)

// MetricType is the Prometheus type of a metric in the catalogue.
type MetricType string

// Metric types.
const (
	Counter   MetricType = "counter"
	Gauge     MetricType = "gauge"
	Histogram MetricType = "histogram"
)

// MetricInfo describes one metric the exporter exposes.
type MetricInfo struct {
	Name   string
	Type   MetricType
	Help   string
	Labels []string
}

// Every metric is declared here once, with its full literal name, so that a grep finds it and
// MetricCatalogue can hand the list to the rule generator and the README check.
var (
	writesTotal = MetricInfo{
		Name: "loopwatch_audit_writes_total", Type: Counter,
		Help:   "Completed write requests (create, update, patch, delete, deletecollection) by actor (top-K or \"other\"), verb, API group, resource and response code class.",
		Labels: []string{"actor", "verb", "group", "resource", "code_class"},
	}
	conflictsTotal = MetricInfo{
		Name: "loopwatch_audit_conflicts_total", Type: Counter,
		Help:   "Writes other than creates answered 409 (optimistic-concurrency conflicts), by actor, API group and resource.",
		Labels: []string{"actor", "group", "resource"},
	}
	handoffsTotal = MetricInfo{
		Name: "loopwatch_audit_handoffs_total", Type: Counter,
		Help:   "Successful writes to an object whose previous successful write was by another actor, by previous actor (from_actor), writing actor (to_actor), API group and resource. Reciprocal series (A->B and B->A both rising) are a fight.",
		Labels: []string{"from_actor", "to_actor", "group", "resource"},
	}
	readsTotal = MetricInfo{
		Name: "loopwatch_audit_reads_total", Type: Counter,
		Help:   "Completed list and watch requests by actor, verb, API group and resource (only when the audit policy records reads).",
		Labels: []string{"actor", "verb", "group", "resource"},
	}
	// The top-offender gauges name the object with object_namespace and object_name, not namespace
	// and name: Prometheus attaches the scrape target's own `namespace` (the exporter pod's), and a
	// clashing exposed label would be renamed to exported_namespace, breaking every rule and panel.
	fightHandoffs = MetricInfo{
		Name: "loopwatch_audit_fight_handoffs", Type: Gauge,
		Help:   "Handoffs in an ongoing write fight: one object written alternately by two actors at least N times within the fight window. Capped set, expires after the offender TTL.",
		Labels: []string{"group", "resource", "subresource", "object_namespace", "object_name", "actor_a", "actor_b"},
	}
	hotObjectWrites = MetricInfo{
		Name: "loopwatch_audit_hot_object_writes_per_second", Type: Gauge,
		Help:   "Write rate of a hot object: one actor rewriting one object faster than the threshold. Capped set, expires after the offender TTL.",
		Labels: []string{"group", "resource", "subresource", "object_namespace", "object_name", "actor"},
	}
	replicaRacePods = MetricInfo{
		Name: "loopwatch_audit_replica_race_pods", Type: Gauge,
		Help:   "Pods of one actor seen writing one object within the race window (replicas racing without leader election). Capped set, expires after the offender TTL.",
		Labels: []string{"group", "resource", "subresource", "object_namespace", "object_name", "actor"},
	}
	requestsTotal = MetricInfo{
		Name: "loopwatch_audit_requests_total", Type: Counter,
		Help:   "Webhook requests by outcome (accepted, rejected) and reason (ok, unauthenticated, forbidden, method_not_allowed, unsupported_media_type, too_large, malformed, overloaded).",
		Labels: []string{"outcome", "reason"},
	}
	batchesTotal = MetricInfo{
		Name: "loopwatch_audit_batches_total", Type: Counter,
		Help: "Event batches decoded and tracked (webhook requests and file ingest chunks).",
	}
	eventsTotal = MetricInfo{
		Name: "loopwatch_audit_events_total", Type: Counter,
		Help:   "Audit events received, by outcome: counted, ignored_stage (not ResponseComplete or Panic) or duplicate (auditID and stage already seen: a retried batch).",
		Labels: []string{"outcome"},
	}
	droppedEventsTotal = MetricInfo{
		Name: "loopwatch_audit_dropped_events_total", Type: Counter,
		Help:   "Events dropped by file or stdin ingest, by reason (malformed, line_too_long).",
		Labels: []string{"reason"},
	}
	decodeSeconds = MetricInfo{
		Name: "loopwatch_audit_decode_seconds", Type: Histogram,
		Help: "Time to decode and attribute one batch.",
	}
	requestSeconds = MetricInfo{
		Name: "loopwatch_audit_request_seconds", Type: Histogram,
		Help: "Time to handle one webhook request whose body is read: receiving and decrypting the body, decoding, tracking and answering.",
	}
	lastBatchTimestamp = MetricInfo{
		Name: "loopwatch_audit_last_batch_timestamp_seconds", Type: Gauge,
		Help: "Unix time of the last batch accepted; a stale value means the API server stopped sending.",
	}
	trackedObjects = MetricInfo{
		Name: "loopwatch_audit_tracked_objects", Type: Gauge,
		Help: "Objects with per-object state (bounded by --max-objects).",
	}
	trackedActors = MetricInfo{
		Name: "loopwatch_audit_tracked_actors", Type: Gauge,
		Help: "Actors counted for top-K ranking (bounded by the candidate table).",
	}
	labelledActors = MetricInfo{
		Name: "loopwatch_audit_labelled_actors", Type: Gauge,
		Help: "Actors that currently have their own label value (at most top-K).",
	}
	evictionsTotal = MetricInfo{
		Name: "loopwatch_audit_evictions_total", Type: Counter,
		Help:   "State evicted to stay within bounds, by table: objects (per-object state), offenders (top-offender entries), actor_labels (labels handed to a more active actor).",
		Labels: []string{"table"},
	}
)

var catalogue = []MetricInfo{
	writesTotal, conflictsTotal, handoffsTotal, readsTotal,
	fightHandoffs, hotObjectWrites, replicaRacePods,
	requestsTotal, batchesTotal, eventsTotal, droppedEventsTotal, decodeSeconds, requestSeconds, lastBatchTimestamp,
	trackedObjects, trackedActors, labelledActors, evictionsTotal,
}

// MetricCatalogue lists every metric the exporter exposes, ordered by name.
func MetricCatalogue() []MetricInfo {
	out := make([]MetricInfo, len(catalogue))
	for i, m := range catalogue {
		m.Labels = append([]string(nil), m.Labels...)
		out[i] = m
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (m MetricInfo) desc() *prometheus.Desc {
	return prometheus.NewDesc(m.Name, m.Help, m.Labels, nil)
}

func (m MetricInfo) counterVec() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: m.Name, Help: m.Help}, m.Labels)
}

// Outcomes and reasons of loopwatch_audit_requests_total, loopwatch_audit_events_total and
// loopwatch_audit_dropped_events_total.
const (
	OutcomeAccepted = "accepted"
	OutcomeRejected = "rejected"

	ReasonOK                   = "ok"
	ReasonUnauthenticated      = "unauthenticated"
	ReasonForbidden            = "forbidden"
	ReasonMethodNotAllowed     = "method_not_allowed"
	ReasonUnsupportedMediaType = "unsupported_media_type"
	ReasonTooLarge             = "too_large"
	ReasonMalformed            = "malformed"
	ReasonOverloaded           = "overloaded"
	ReasonLineTooLong          = "line_too_long"

	EventCounted      = "counted"
	EventIgnoredStage = "ignored_stage"
	EventDuplicate    = "duplicate"
)

// Metrics holds the exporter's metrics. It is the tracker's Sink; its methods are called with
// the tracker's lock held, which also guards the label caches.
type Metrics struct {
	writes, conflicts, handoffs, reads *prometheus.CounterVec
	requests, events, dropped          *prometheus.CounterVec
	batches                            prometheus.Counter
	decode, request                    prometheus.Histogram
	lastBatch                          prometheus.Gauge

	writeCache    map[writeKey]prometheus.Counter
	lastWrite     writeKey
	lastWriteC    prometheus.Counter
	conflictCache map[conflictKey]prometheus.Counter
	handoffCache  map[handoffKey]prometheus.Counter
	readCache     map[readKey]prometheus.Counter
}

type writeKey struct{ actor, verb, group, resource, class string }
type conflictKey struct{ actor, group, resource string }
type handoffKey struct{ from, to, group, resource string }
type readKey struct{ actor, verb, group, resource string }

// batchBuckets are the bounds of the per-batch latency histograms, in seconds: a 400-event batch
// takes a fraction of a millisecond.
var batchBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 1}

// NewMetrics creates the metrics and registers them, together with the tracker's offender
// gauges and self-metrics, with reg.
func NewMetrics(reg prometheus.Registerer, tracker func() *track.Tracker) (*Metrics, error) {
	m := &Metrics{
		writes:    writesTotal.counterVec(),
		conflicts: conflictsTotal.counterVec(),
		handoffs:  handoffsTotal.counterVec(),
		reads:     readsTotal.counterVec(),
		requests:  requestsTotal.counterVec(),
		events:    eventsTotal.counterVec(),
		dropped:   droppedEventsTotal.counterVec(),
		batches:   prometheus.NewCounter(prometheus.CounterOpts{Name: batchesTotal.Name, Help: batchesTotal.Help}),
		decode: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: decodeSeconds.Name, Help: decodeSeconds.Help, Buckets: batchBuckets,
		}),
		request: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: requestSeconds.Name, Help: requestSeconds.Help, Buckets: batchBuckets,
		}),
		lastBatch:     prometheus.NewGauge(prometheus.GaugeOpts{Name: lastBatchTimestamp.Name, Help: lastBatchTimestamp.Help}),
		writeCache:    map[writeKey]prometheus.Counter{},
		conflictCache: map[conflictKey]prometheus.Counter{},
		handoffCache:  map[handoffKey]prometheus.Counter{},
		readCache:     map[readKey]prometheus.Counter{},
	}
	for _, r := range []string{ReasonOK} {
		m.requests.WithLabelValues(OutcomeAccepted, r)
	}
	for _, r := range []string{ReasonUnauthenticated, ReasonForbidden, ReasonMethodNotAllowed, ReasonUnsupportedMediaType, ReasonTooLarge, ReasonMalformed, ReasonOverloaded} {
		m.requests.WithLabelValues(OutcomeRejected, r)
	}
	for _, o := range []string{EventCounted, EventIgnoredStage, EventDuplicate} {
		m.events.WithLabelValues(o)
	}
	for _, r := range []string{ReasonMalformed, ReasonLineTooLong} {
		m.dropped.WithLabelValues(r)
	}
	for _, c := range []prometheus.Collector{
		m.writes, m.conflicts, m.handoffs, m.reads, m.requests, m.events, m.dropped, m.batches, m.decode,
		m.request, m.lastBatch, &trackerCollector{tracker: tracker},
	} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// codeClass maps a response code to its class label.
func codeClass(code int32) string {
	switch {
	case code >= 200 && code < 300:
		return "2xx"
	case code >= 300 && code < 400:
		return "3xx"
	case code >= 400 && code < 500:
		return "4xx"
	case code >= 500 && code < 600:
		return "5xx"
	}
	return "unknown"
}

// Write implements track.Sink.
func (m *Metrics) Write(o *track.Observation) {
	k := writeKey{o.ActorLabel, o.Event.Verb, o.Group, o.Resource, codeClass(o.Event.Code)}
	c := m.lastWriteC
	if c == nil || k != m.lastWrite {
		var ok bool
		if c, ok = m.writeCache[k]; !ok {
			c = m.writes.WithLabelValues(k.actor, k.verb, k.group, k.resource, k.class)
			m.writeCache[k] = c
		}
		m.lastWrite, m.lastWriteC = k, c
	}
	c.Inc()
	if !o.Event.IsConflict() {
		return
	}
	ck := conflictKey{o.ActorLabel, o.Group, o.Resource}
	c, ok := m.conflictCache[ck]
	if !ok {
		c = m.conflicts.WithLabelValues(ck.actor, ck.group, ck.resource)
		m.conflictCache[ck] = c
	}
	c.Inc()
}

// Read implements track.Sink.
func (m *Metrics) Read(o *track.Observation) {
	k := readKey{o.ActorLabel, o.Event.Verb, o.Group, o.Resource}
	c, ok := m.readCache[k]
	if !ok {
		c = m.reads.WithLabelValues(k.actor, k.verb, k.group, k.resource)
		m.readCache[k] = c
	}
	c.Inc()
}

// Handoff implements track.Sink.
func (m *Metrics) Handoff(o *track.Observation, _, fromLabel string) {
	k := handoffKey{fromLabel, o.ActorLabel, o.Group, o.Resource}
	c, ok := m.handoffCache[k]
	if !ok {
		c = m.handoffs.WithLabelValues(k.from, k.to, k.group, k.resource)
		m.handoffCache[k] = c
	}
	c.Inc()
}

// Demoted implements track.Sink: the series of an actor that lost its label are deleted, so the
// number of series stays bounded by top-K.
func (m *Metrics) Demoted(label string) {
	m.writes.DeletePartialMatch(prometheus.Labels{"actor": label})
	m.lastWriteC = nil
	m.conflicts.DeletePartialMatch(prometheus.Labels{"actor": label})
	m.reads.DeletePartialMatch(prometheus.Labels{"actor": label})
	m.handoffs.DeletePartialMatch(prometheus.Labels{"from_actor": label})
	m.handoffs.DeletePartialMatch(prometheus.Labels{"to_actor": label})
	for k := range m.writeCache {
		if k.actor == label {
			delete(m.writeCache, k)
		}
	}
	for k := range m.conflictCache {
		if k.actor == label {
			delete(m.conflictCache, k)
		}
	}
	for k := range m.readCache {
		if k.actor == label {
			delete(m.readCache, k)
		}
	}
	for k := range m.handoffCache {
		if k.from == label || k.to == label {
			delete(m.handoffCache, k)
		}
	}
}

// trackerCollector exposes the tracker's offenders and self-metrics at scrape time, so expired
// offenders simply stop being exposed.
type trackerCollector struct {
	tracker func() *track.Tracker
}

var (
	fightDesc     = fightHandoffs.desc()
	hotDesc       = hotObjectWrites.desc()
	raceDesc      = replicaRacePods.desc()
	objectsDesc   = trackedObjects.desc()
	actorsDesc    = trackedActors.desc()
	labelledDesc  = labelledActors.desc()
	evictionsDesc = evictionsTotal.desc()
)

func (c *trackerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{fightDesc, hotDesc, raceDesc, objectsDesc, actorsDesc, labelledDesc, evictionsDesc} {
		ch <- d
	}
}

func (c *trackerCollector) Collect(ch chan<- prometheus.Metric) {
	t := c.tracker()
	if t == nil {
		return
	}
	for _, f := range t.Fights() {
		o := f.Object
		ch <- prometheus.MustNewConstMetric(fightDesc, prometheus.GaugeValue, float64(f.Handoffs),
			o.Group, o.Resource, o.Subresource, o.Namespace, o.Name, f.ActorA, f.ActorB)
	}
	for _, h := range t.HotObjects() {
		o := h.Object
		ch <- prometheus.MustNewConstMetric(hotDesc, prometheus.GaugeValue, h.WritesPerSecond(),
			o.Group, o.Resource, o.Subresource, o.Namespace, o.Name, h.Actor)
	}
	for _, r := range t.Races() {
		o := r.Object
		ch <- prometheus.MustNewConstMetric(raceDesc, prometheus.GaugeValue, float64(len(r.Pods)),
			o.Group, o.Resource, o.Subresource, o.Namespace, o.Name, r.Actor)
	}
	s := t.Stats()
	ch <- prometheus.MustNewConstMetric(objectsDesc, prometheus.GaugeValue, float64(s.TrackedObjects))
	ch <- prometheus.MustNewConstMetric(actorsDesc, prometheus.GaugeValue, float64(s.TrackedActors))
	ch <- prometheus.MustNewConstMetric(labelledDesc, prometheus.GaugeValue, float64(s.LabelledActors))
	ch <- prometheus.MustNewConstMetric(evictionsDesc, prometheus.CounterValue, float64(s.ObjectEvictions), "objects")
	ch <- prometheus.MustNewConstMetric(evictionsDesc, prometheus.CounterValue, float64(s.OffenderEvictions), "offenders")
	ch <- prometheus.MustNewConstMetric(evictionsDesc, prometheus.CounterValue, float64(s.ActorDemotions), "actor_labels")
}
