package managed

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/loopwatch/loopwatch/exporter/decode"
)

// AKS streams its audit resource logs to an Event Hub; Event Hubs speak the Kafka protocol on
// port 9093 ("Use Azure Event Hubs from Apache Kafka applications"): the namespace is the
// bootstrap server, the event hub the topic, an Event Hubs consumer group the Kafka group, and
// clients authenticate with SASL PLAIN over TLS, user "$ConnectionString", password the
// namespace's (or the hub's) connection string. Each Kafka record's value is an event body of
// resource logs (azure.go). EventHubReader consumes it with franz-go.

// DefaultMaxEventHubBytes bounds an Event Hub event: 1 MB is the Standard tier's largest event
// (Premium and Dedicated allow 20 MB: raise Limits.MaxRecordBytes there).
const DefaultMaxEventHubBytes = 1 << 20

// EventHubConfig configures the Event Hub reader.
type EventHubConfig struct {
	// Brokers are the bootstrap servers, e.g. "<namespace>.servicebus.windows.net:9093".
	Brokers []string
	// Topic is the event hub's name.
	Topic string
	// Group is the consumer group ("$Default" when empty).
	Group string
	// ConnectionString is the SASL PLAIN password (user "$ConnectionString"); empty disables
	// SASL (a plain Kafka cluster, tests).
	ConnectionString string
	// TLS is the client TLS configuration; nil with PlaintextForTests unset means TLS with the
	// system roots, as Event Hubs require.
	TLS *tls.Config
	// PlaintextForTests connects without TLS (a local Kafka cluster only).
	PlaintextForTests bool
	// FromStart makes a group without committed offsets start at the oldest retained event
	// instead of the newest.
	FromStart bool
	// Limits bound each record (an event body: DefaultMaxEventHubBytes when MaxRecordBytes is 0);
	// MaxRecordBytes also bounds fetches (4 records per partition, 16 in all).
	Limits Limits
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Sink receives decoded events (the exporter's pipeline: dedupe, attribution, tracking).
type Sink interface {
	ObserveEvents(events []decode.Event)
}

// EventHubReader consumes an Event Hub through its Kafka endpoint and hands its events to a
// sink. Offsets are committed after the events were handed on (at least once: a rebalance may
// hand events on again, and the pipeline's deduplication drops them).
type EventHubReader struct {
	cfg     EventHubConfig
	client  *kgo.Client
	sink    Sink
	metrics *Metrics
	dec     *Decoder
	log     *slog.Logger
}

// NewEventHubReader builds the Kafka client; it connects when Run starts.
func NewEventHubReader(cfg EventHubConfig, sink Sink, m *Metrics) (*EventHubReader, error) {
	var errs []error
	if len(cfg.Brokers) == 0 {
		errs = append(errs, errors.New("event hub: brokers are required"))
	}
	if cfg.Topic == "" {
		errs = append(errs, errors.New("event hub: the event hub (topic) is required"))
	}
	if sink == nil || m == nil {
		errs = append(errs, errors.New("event hub: a sink and metrics are required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.Group == "" {
		cfg.Group = "$Default"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Limits.MaxRecordBytes <= 0 {
		cfg.Limits.MaxRecordBytes = DefaultMaxEventHubBytes
	}
	cfg.Limits = cfg.Limits.withDefaults()
	reset := kgo.NewOffset().AtEnd()
	if cfg.FromStart {
		reset = kgo.NewOffset().AtStart()
	}
	maxRecord := int32(min(cfg.Limits.MaxRecordBytes, 1<<30))
	opts := []kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.ConsumerGroup(cfg.Group),
		kgo.ConsumeTopics(cfg.Topic),
		kgo.ConsumeResetOffset(reset),
		kgo.AutoCommitMarks(),
		kgo.AutoCommitInterval(5 * time.Second),
		// Bounds: one fetch holds at most 4 records' worth per partition and 16 records' worth
		// in all; a broker response larger than that is refused by the client.
		kgo.FetchMaxPartitionBytes(4 * maxRecord),
		kgo.FetchMaxBytes(16 * maxRecord),
		kgo.BrokerMaxReadBytes(32 * maxRecord),
		kgo.ClientID("loopwatch-exporter"),
	}
	if cfg.ConnectionString != "" {
		opts = append(opts, kgo.SASL(plain.Auth{User: "$ConnectionString", Pass: cfg.ConnectionString}.AsMechanism()))
	}
	if !cfg.PlaintextForTests {
		tc := cfg.TLS
		if tc == nil {
			tc = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	client, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("event hub: kafka client: %w", err)
	}
	m.Init(SourceEventHub, DeliveryMalformed, DeliveryTooLarge, DeliveryFetchError, DeliveryConnectError)
	dec := NewDecoder(cfg.Limits)
	dec.Flush = sink.ObserveEvents
	return &EventHubReader{cfg: cfg, client: client, sink: sink, metrics: m, dec: dec, log: cfg.Logger}, nil
}

// Run consumes until ctx is done, then commits what was handed on and closes the client. It first
// reaches the endpoint: refused credentials end it with an error (they will not get better),
// other failures are counted as connect_error and retried.
func (r *EventHubReader) Run(ctx context.Context) error {
	defer r.client.Close()
	for {
		err := r.client.Ping(ctx)
		if err == nil || ctx.Err() != nil {
			break
		}
		if errors.Is(err, kerr.SaslAuthenticationFailed) || errors.Is(err, kerr.IllegalSaslState) || errors.Is(err, kerr.UnsupportedSaslMechanism) {
			r.metrics.Delivery(SourceEventHub, OutcomeRejected, DeliveryConnectError)
			return fmt.Errorf("event hub %v: authentication refused (check the connection string): %w", r.cfg.Brokers, err)
		}
		r.metrics.Delivery(SourceEventHub, OutcomeRejected, DeliveryConnectError)
		r.log.Warn("Event hub unreachable, retrying", "brokers", r.cfg.Brokers, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
		}
	}
	r.log.Info("Reading audit events from the event hub", "brokers", r.cfg.Brokers, "topic", r.cfg.Topic, "group", r.cfg.Group)
	for {
		fetches := r.client.PollRecords(ctx, 1000)
		if fetches.IsClientClosed() || ctx.Err() != nil {
			break
		}
		fetches.EachError(func(topic string, partition int32, err error) {
			if errors.Is(err, context.Canceled) {
				return
			}
			r.metrics.Delivery(SourceEventHub, OutcomeRejected, DeliveryFetchError)
			r.log.Warn("Event hub fetch failed", "topic", topic, "partition", partition, "err", err)
		})
		r.handle(fetches)
	}
	cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.client.CommitMarkedOffsets(cctx); err != nil {
		r.log.Warn("Committing event hub offsets failed", "err", err)
	}
	r.log.Info("Event hub reader stopped")
	return nil
}

// handle decodes a poll's records, hands their events on in one batch and marks the records
// for commit.
func (r *EventHubReader) handle(fetches kgo.Fetches) {
	d := r.dec
	d.Reset()
	var records []*kgo.Record
	fetches.EachRecord(func(rec *kgo.Record) {
		records = append(records, rec)
		if len(rec.Value) > r.cfg.Limits.MaxRecordBytes {
			r.metrics.Delivery(SourceEventHub, OutcomeRejected, DeliveryTooLarge)
			return
		}
		events := len(d.Events)
		before := d.Tally
		if err := d.EventHubBody(rec.Value); err != nil {
			d.Events, d.Tally = d.Events[:events], before
			r.metrics.Delivery(SourceEventHub, OutcomeRejected, DeliveryMalformed)
			r.log.Debug("Event hub event refused", "partition", rec.Partition, "offset", rec.Offset, "err", err)
			return
		}
		r.metrics.Delivery(SourceEventHub, OutcomeAccepted, DeliveryOK)
	})
	if len(d.Events) > 0 {
		r.sink.ObserveEvents(d.Events)
	}
	r.metrics.Records(SourceEventHub, &d.Tally)
	r.client.MarkCommitRecords(records...)
}
