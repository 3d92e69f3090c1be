package exporter

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/loopwatch/loopwatch/catalogue"
	"github.com/loopwatch/loopwatch/exporter/track"
)

// The collectors are built from the catalogue's declarations (package catalogue), which hold the
// name, help, labels and buckets of every metric the exporter exposes; these helpers only turn a
// declaration into the client_golang type.

func desc(m catalogue.Metric) *prometheus.Desc {
	return prometheus.NewDesc(m.Name, m.Help, m.Labels, nil)
}

func counterVec(m catalogue.Metric) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: m.Name, Help: m.Help}, m.Labels)
}

func counter(m catalogue.Metric) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: m.Name, Help: m.Help})
}

func gauge(m catalogue.Metric) prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{Name: m.Name, Help: m.Help})
}

func histogram(m catalogue.Metric) prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{Name: m.Name, Help: m.Help, Buckets: m.Buckets})
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
	ReasonTooManyEvents        = "too_many_events"
	ReasonNotEventList         = "not_event_list"
	ReasonSlowBody             = "slow_body"
	ReasonShuttingDown         = "shutting_down"
	ReasonPlainHTTP            = "plain_http"
	ReasonTooManyConnections   = "too_many_connections"
	ReasonLineTooLong          = "line_too_long"
	ReasonNotAuditEvent        = "not_audit_event"

	EventCounted        = "counted"
	EventIgnoredStage   = "ignored_stage"
	EventUnattributable = "unattributable"
	EventDuplicate      = "duplicate"
)

// RejectReasons are the reasons of loopwatch_audit_requests_total{outcome="rejected"}: every
// way a webhook request can be refused.
var RejectReasons = []string{
	ReasonUnauthenticated, ReasonForbidden, ReasonMethodNotAllowed, ReasonUnsupportedMediaType,
	ReasonTooLarge, ReasonTooManyEvents, ReasonMalformed, ReasonNotEventList, ReasonOverloaded,
	ReasonSlowBody, ReasonShuttingDown, ReasonPlainHTTP, ReasonTooManyConnections,
}

// Metrics holds the exporter's metrics. It is the tracker's Sink; its methods are called with
// the tracker's lock held, which also guards the label caches.
//
// Each per-actor family keeps at most maxSeries label combinations: actors are top-K and
// group/resource pairs bounded already, but their product is not small, so once a family is full
// a new combination is counted under actor and resource "other" (its verb and code class kept),
// and totals stay right.
type Metrics struct {
	maxSeries int

	writes, conflicts, handoffs, reads *prometheus.CounterVec
	initialLists                       *prometheus.CounterVec
	requests, events, dropped          *prometheus.CounterVec
	scrapesRefused                     *prometheus.CounterVec
	batches                            prometheus.Counter
	decode, request, requestBytes      prometheus.Histogram
	lastBatch                          prometheus.Gauge
	// eventOutcomes are the events counters by outcome: counted, ignored_stage, unattributable,
	// duplicate.
	eventOutcomes [4]*shared
	batchCount    *shared

	// shared numbers the counters the replicas share (counts.go). standby says this replica
	// follows a leader: the tracker's observations count nothing, the leader's increments come
	// through the replication stream instead.
	shared  *sharedCounters
	standby bool

	writeCache    map[writeKey]*shared
	lastWrite     writeKey
	lastWriteC    *shared
	conflictCache map[conflictKey]*shared
	handoffCache  map[handoffKey]*shared
	readCache     map[readKey]*shared
	initialCache  map[readKey]*shared
}

type writeKey struct{ actor, verb, group, resource, class string }
type conflictKey struct{ actor, group, resource string }
type handoffKey struct{ from, to, group, resource string }
type readKey struct{ actor, verb, group, resource string }

// DefaultMaxSeries bounds the series of each per-actor family (writes, conflicts, handoffs,
// reads); see Metrics.
const DefaultMaxSeries = 5000

// NewMetrics creates the metrics and registers them, together with the tracker's offender
// gauges and self-metrics, with reg. maxSeries bounds each per-actor family (DefaultMaxSeries
// when 0).
func NewMetrics(reg prometheus.Registerer, tracker func() *track.Tracker, maxSeries int) (*Metrics, error) {
	if maxSeries <= 0 {
		maxSeries = DefaultMaxSeries
	}
	m := &Metrics{
		maxSeries:      maxSeries,
		writes:         counterVec(catalogue.AuditWritesTotal),
		conflicts:      counterVec(catalogue.AuditConflictsTotal),
		handoffs:       counterVec(catalogue.AuditHandoffsTotal),
		reads:          counterVec(catalogue.AuditReadsTotal),
		requests:       counterVec(catalogue.AuditRequestsTotal),
		scrapesRefused: counterVec(catalogue.AuditScrapesRefusedTotal),
		events:         counterVec(catalogue.AuditEventsTotal),
		dropped:        counterVec(catalogue.AuditDroppedEventsTotal),
		batches:        counter(catalogue.AuditBatchesTotal),
		decode:         histogram(catalogue.AuditDecodeSeconds),
		request:        histogram(catalogue.AuditRequestSeconds),
		requestBytes:   histogram(catalogue.AuditRequestBytes),
		lastBatch:      gauge(catalogue.AuditLastBatchTimestampSeconds),
		shared:         newSharedCounters(),
		writeCache:     map[writeKey]*shared{},
		conflictCache:  map[conflictKey]*shared{},
		handoffCache:   map[handoffKey]*shared{},
		readCache:      map[readKey]*shared{},
		initialCache:   map[readKey]*shared{},
		initialLists:   counterVec(catalogue.AuditInitialListsTotal),
	}
	for _, r := range []string{ReasonOK} {
		m.requests.WithLabelValues(OutcomeAccepted, r)
	}
	for _, r := range RejectReasons {
		m.requests.WithLabelValues(OutcomeRejected, r)
	}
	for _, r := range []string{ReasonUnauthenticated, ReasonForbidden} {
		m.scrapesRefused.WithLabelValues(r)
	}
	for i, outcome := range []string{EventCounted, EventIgnoredStage, EventUnattributable, EventDuplicate} {
		m.eventOutcomes[i] = m.shared.create(famEvents, m.events.WithLabelValues(outcome), []string{outcome})
	}
	m.batchCount = m.shared.create(famBatches, m.batches, nil)
	for _, r := range []string{ReasonMalformed, ReasonLineTooLong, ReasonNotAuditEvent} {
		m.dropped.WithLabelValues(r)
	}
	for _, c := range []prometheus.Collector{
		m.writes, m.conflicts, m.handoffs, m.reads, m.initialLists, m.requests, m.scrapesRefused, m.events, m.dropped, m.batches, m.decode,
		m.request, m.requestBytes, m.lastBatch, &trackerCollector{tracker: tracker}, &orderCollector{tracker: tracker},
	} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// countBatch counts a batch and its events by outcome.
func (m *Metrics) countBatch(r track.BatchResult) {
	if m.standby {
		return
	}
	for i, n := range [...]int{r.Counted, r.IgnoredStage, r.Unattributable, r.Skipped} {
		if n > 0 {
			m.shared.add(m.eventOutcomes[i], uint64(n))
		}
	}
	m.shared.inc(m.batchCount)
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
	if m.standby {
		return
	}
	k := writeKey{o.ActorLabel, o.Event.Verb, o.Group, o.Resource, codeClass(o.Event.Code)}
	c := m.lastWriteC
	if c == nil || k != m.lastWrite {
		c = m.writeCounter(k)
		m.lastWrite, m.lastWriteC = writeKey{o.ActorLabel, o.Event.Verb, o.Group, o.Resource, k.class}, c
	}
	m.shared.inc(c)
	if !o.Event.IsConflict() {
		return
	}
	m.shared.inc(m.conflictCounter(conflictKey{o.ActorLabel, o.Group, o.Resource}))
}

// writeCounter returns the series of k, created when new: under actor, group and resource
// "other" once the family holds maxSeries.
func (m *Metrics) writeCounter(k writeKey) *shared {
	c, ok := m.writeCache[k]
	if ok {
		return c
	}
	if len(m.writeCache) >= m.maxSeries {
		k.actor, k.group, k.resource = track.OtherLabel, track.OtherLabel, track.OtherLabel
	}
	if c, ok = m.writeCache[k]; !ok {
		labels := []string{k.actor, k.verb, k.group, k.resource, k.class}
		c = m.shared.create(famWrites, m.writes.WithLabelValues(labels...), labels)
		m.writeCache[k] = c
	}
	return c
}

// conflictCounter is writeCounter's for conflicts.
func (m *Metrics) conflictCounter(k conflictKey) *shared {
	c, ok := m.conflictCache[k]
	if ok {
		return c
	}
	if len(m.conflictCache) >= m.maxSeries {
		k = conflictKey{track.OtherLabel, track.OtherLabel, track.OtherLabel}
	}
	if c, ok = m.conflictCache[k]; !ok {
		labels := []string{k.actor, k.group, k.resource}
		c = m.shared.create(famConflicts, m.conflicts.WithLabelValues(labels...), labels)
		m.conflictCache[k] = c
	}
	return c
}

// Read implements track.Sink: every list and watch counts as a read, and those that load the
// collection from scratch as an initial list too.
func (m *Metrics) Read(o *track.Observation) {
	if m.standby {
		return
	}
	k := readKey{o.ActorLabel, o.Event.Verb, o.Group, o.Resource}
	m.shared.inc(m.readCounter(famReads, k))
	if o.Event.IsInitialList() {
		m.shared.inc(m.readCounter(famInitialLists, k))
	}
}

// readCounter returns the series of k in a read family (famReads or famInitialLists), bounded
// like the others.
func (m *Metrics) readCounter(fam family, k readKey) *shared {
	vec, cache := m.reads, m.readCache
	if fam == famInitialLists {
		vec, cache = m.initialLists, m.initialCache
	}
	c, ok := cache[k]
	if ok {
		return c
	}
	if len(cache) >= m.maxSeries {
		k.actor, k.group, k.resource = track.OtherLabel, track.OtherLabel, track.OtherLabel
	}
	if c, ok = cache[k]; !ok {
		labels := []string{k.actor, k.verb, k.group, k.resource}
		c = m.shared.create(fam, vec.WithLabelValues(labels...), labels)
		cache[k] = c
	}
	return c
}

// Handoff implements track.Sink.
func (m *Metrics) Handoff(h *track.Handoff) {
	if m.standby {
		return
	}
	m.shared.inc(m.handoffCounter(handoffKey{h.FromLabel, h.ToLabel, h.Group, h.Resource}))
}

// handoffCounter is writeCounter's for handoffs.
func (m *Metrics) handoffCounter(k handoffKey) *shared {
	c, ok := m.handoffCache[k]
	if ok {
		return c
	}
	if len(m.handoffCache) >= m.maxSeries {
		k = handoffKey{track.OtherLabel, track.OtherLabel, track.OtherLabel, track.OtherLabel}
	}
	if c, ok = m.handoffCache[k]; !ok {
		labels := []string{k.from, k.to, k.group, k.resource}
		c = m.shared.create(famHandoffs, m.handoffs.WithLabelValues(labels...), labels)
		m.handoffCache[k] = c
	}
	return c
}

// Demoted implements track.Sink: the series of an actor that lost its label are deleted, so the
// number of series stays bounded by top-K. A standby deletes the series the leader deletes, when
// the stream says so, not its own tracker's.
func (m *Metrics) Demoted(label string) {
	if m.standby {
		return
	}
	m.deleteActor(label)
}

// deleteActor deletes the series of the actor label value.
func (m *Metrics) deleteActor(label string) {
	m.writes.DeletePartialMatch(prometheus.Labels{catalogue.LabelActor: label})
	m.lastWriteC = nil
	m.conflicts.DeletePartialMatch(prometheus.Labels{catalogue.LabelActor: label})
	m.reads.DeletePartialMatch(prometheus.Labels{catalogue.LabelActor: label})
	m.initialLists.DeletePartialMatch(prometheus.Labels{catalogue.LabelActor: label})
	m.handoffs.DeletePartialMatch(prometheus.Labels{"from_actor": label})
	m.handoffs.DeletePartialMatch(prometheus.Labels{"to_actor": label})
	for k, c := range m.writeCache {
		if k.actor == label {
			delete(m.writeCache, k)
			m.shared.drop(c)
		}
	}
	for k, c := range m.conflictCache {
		if k.actor == label {
			delete(m.conflictCache, k)
			m.shared.drop(c)
		}
	}
	for _, cache := range []map[readKey]*shared{m.readCache, m.initialCache} {
		for k, c := range cache {
			if k.actor == label {
				delete(cache, k)
				m.shared.drop(c)
			}
		}
	}
	for k, c := range m.handoffCache {
		if k.from == label || k.to == label {
			delete(m.handoffCache, k)
			m.shared.drop(c)
		}
	}
}

// trackerCollector exposes the tracker's offenders and self-metrics at scrape time, so expired
// offenders simply stop being exposed.
type trackerCollector struct {
	tracker func() *track.Tracker
}

var (
	fightDesc     = desc(catalogue.AuditFightHandoffs)
	hotDesc       = desc(catalogue.AuditHotObjectWritesPerSecond)
	raceDesc      = desc(catalogue.AuditReplicaRacePods)
	objectsDesc   = desc(catalogue.AuditTrackedObjects)
	actorsDesc    = desc(catalogue.AuditTrackedActors)
	labelledDesc  = desc(catalogue.AuditLabelledActors)
	evictionsDesc = desc(catalogue.AuditEvictionsTotal)
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
		nsA, saA, _ := catalogue.SplitServiceAccount(f.ActorA)
		nsB, saB, _ := catalogue.SplitServiceAccount(f.ActorB)
		ch <- prometheus.MustNewConstMetric(fightDesc, prometheus.GaugeValue, float64(f.Handoffs),
			o.Group, o.Resource, o.Subresource, o.Namespace, o.Name, f.ActorA, f.ActorB, f.FieldManagerA, f.FieldManagerB, f.MutatingWebhook,
			nsA, saA, f.PodA, nsB, saB, f.PodB)
	}
	for _, h := range t.HotObjects() {
		o := h.Object
		ns, sa, _ := catalogue.SplitServiceAccount(h.Actor)
		ch <- prometheus.MustNewConstMetric(hotDesc, prometheus.GaugeValue, h.WritesPerSecond(),
			o.Group, o.Resource, o.Subresource, o.Namespace, o.Name, h.Actor, h.FieldManager, h.MutatingWebhook, ns, sa, h.Pod)
	}
	for _, r := range t.Races() {
		o := r.Object
		ns, sa, _ := catalogue.SplitServiceAccount(r.Actor)
		ch <- prometheus.MustNewConstMetric(raceDesc, prometheus.GaugeValue, float64(len(r.Pods)),
			o.Group, o.Resource, o.Subresource, o.Namespace, o.Name, r.Actor, ns, sa, r.LastPod)
	}
	s := t.Stats()
	ch <- prometheus.MustNewConstMetric(objectsDesc, prometheus.GaugeValue, float64(s.TrackedObjects))
	ch <- prometheus.MustNewConstMetric(actorsDesc, prometheus.GaugeValue, float64(s.TrackedActors))
	ch <- prometheus.MustNewConstMetric(labelledDesc, prometheus.GaugeValue, float64(s.LabelledActors))
	ch <- prometheus.MustNewConstMetric(evictionsDesc, prometheus.CounterValue, float64(s.ObjectEvictions), "objects")
	ch <- prometheus.MustNewConstMetric(evictionsDesc, prometheus.CounterValue, float64(s.OffenderEvictions), "offenders")
	ch <- prometheus.MustNewConstMetric(evictionsDesc, prometheus.CounterValue, float64(s.ActorDemotions), "actor_labels")
}
