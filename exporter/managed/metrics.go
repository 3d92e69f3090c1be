package managed

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/loopwatch/loopwatch/catalogue"
)

// Sources, the values of the source label.
const (
	SourceFirehose = "eks_firehose"
	SourcePubSub   = "gke_pubsub"
	SourceEventHub = "aks_eventhub"
)

// Outcomes of a delivery.
const (
	OutcomeAccepted  = "accepted"
	OutcomeDuplicate = "duplicate"
	OutcomeRejected  = "rejected"
)

// Reasons of a delivery's outcome that the sources add to the webhook's.
const (
	DeliveryOK        = "ok"
	DeliveryMalformed = "malformed"
	// DeliveryRepeated: the delivery's ID (Firehose requestId, Pub/Sub messageId) was accepted
	// before; it is acknowledged again and nothing in it is counted.
	DeliveryRepeated = "repeated_id"
	// DeliveryTooLarge: an Event Hub event larger than the record bound.
	DeliveryTooLarge = "too_large"
	// DeliveryFetchError: the Kafka client reported a fetch error for a partition.
	DeliveryFetchError = "fetch_error"
	// DeliveryConnectError: the Kafka endpoint could not be reached, or refused the credentials.
	DeliveryConnectError = "connect_error"
)

// Metrics are the sources' counters, built from the catalogue's declarations.
type Metrics struct {
	deliveries *prometheus.CounterVec
	records    *prometheus.CounterVec
}

// NewMetrics creates the sources' metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: catalogue.AuditSourceDeliveriesTotal.Name, Help: catalogue.AuditSourceDeliveriesTotal.Help,
		}, catalogue.AuditSourceDeliveriesTotal.Labels),
		records: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: catalogue.AuditSourceRecordsTotal.Name, Help: catalogue.AuditSourceRecordsTotal.Help,
		}, catalogue.AuditSourceRecordsTotal.Labels),
	}
	for _, c := range []prometheus.Collector{m.deliveries, m.records} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Init creates the series of a source that is configured, so that they read 0 before the first
// delivery.
func (m *Metrics) Init(source string, rejectReasons ...string) {
	m.deliveries.WithLabelValues(source, OutcomeAccepted, DeliveryOK)
	m.deliveries.WithLabelValues(source, OutcomeDuplicate, DeliveryRepeated)
	for _, r := range rejectReasons {
		m.deliveries.WithLabelValues(source, OutcomeRejected, r)
	}
	for _, r := range ReasonLabels {
		m.records.WithLabelValues(source, r)
	}
}

// Delivery counts one delivery.
func (m *Metrics) Delivery(source, outcome, reason string) {
	m.deliveries.WithLabelValues(source, outcome, reason).Inc()
}

// DeliveryCounter returns the counter of a source's deliveries with that outcome and reason.
func (m *Metrics) DeliveryCounter(source, outcome, reason string) prometheus.Counter {
	return m.deliveries.WithLabelValues(source, outcome, reason)
}

// Records adds a delivery's records by reason.
func (m *Metrics) Records(source string, t *Tally) {
	for r, n := range t {
		if n > 0 {
			m.records.WithLabelValues(source, ReasonLabels[r]).Add(float64(n))
		}
	}
}
