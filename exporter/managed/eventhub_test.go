package managed

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/loopwatch/loopwatch/exporter/decode"
	"github.com/loopwatch/loopwatch/exporter/managed/forms"
	"github.com/loopwatch/loopwatch/internal/stack"
)

// The Event Hub reader is tested against franz-go's in-process Kafka-protocol cluster (kfake)
// configured as Event Hubs' Kafka endpoint is: TLS, SASL PLAIN with user $ConnectionString and
// the connection string as password, the event hub as topic, a consumer group. What kfake cannot
// show about Event Hubs is listed in the README ("Managed clusters").

const (
	testHub        = "aks-audit"
	testConnString = "Endpoint=sb://loopwatch-test.servicebus.windows.net/;SharedAccessKeyName=listen;SharedAccessKey=c2VjcmV0;EntityPath=aks-audit"
)

// testTLS returns a server certificate for 127.0.0.1 and a pool trusting it.
func testTLS(t *testing.T) (*tls.Config, *x509.CertPool) {
	t.Helper()
	ca, err := stack.NewCertAuthority("loopwatch-eventhub-test-ca")
	if err != nil {
		t.Fatal(err)
	}
	serving, err := ca.ServingTLS("loopwatch-test.servicebus.windows.net")
	if err != nil {
		t.Fatal(err)
	}
	return serving, ca.Pool()
}

// eventHubCluster starts kfake as an Event Hubs Kafka endpoint.
func eventHubCluster(t *testing.T) (*kfake.Cluster, *x509.CertPool) {
	t.Helper()
	serverTLS, roots := testTLS(t)
	c, err := kfake.NewCluster(
		kfake.NumBrokers(1), kfake.SeedTopics(2, testHub), kfake.TLS(serverTLS),
		kfake.EnableSASL(), kfake.Superuser("PLAIN", "$ConnectionString", testConnString),
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, roots
}

// produce writes the bodies as Azure Monitor does: one Kafka record per event body.
func produce(t *testing.T, c *kfake.Cluster, roots *x509.CertPool, bodies [][]byte) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DialTLSConfig(&tls.Config{RootCAs: roots}),
		kgo.SASL(plain.Auth{User: "$ConnectionString", Pass: testConnString}.AsMechanism()), kgo.DefaultProduceTopic(testHub))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i, b := range bodies {
		if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte{byte(i)}, Value: b}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// collector is a sink that keeps copies of the events it is handed.
type collector struct {
	mu     sync.Mutex
	events []decode.Event
}

func (c *collector) ObserveEvents(evs []decode.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, evs...)
}

func (c *collector) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.events)
}

func runReader(t *testing.T, cfg EventHubConfig, sink Sink, until func() bool) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger = slog.New(slog.DiscardHandler)
	r, err := NewEventHubReader(cfg, sink, m)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	for deadline := time.Now().Add(20 * time.Second); !until(); {
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("the reader did not get there within 20s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return reg
}

func TestEventHubReaderOverTLSWithConnectionString(t *testing.T) {
	cluster, roots := eventHubCluster(t)
	evs := nativeEvents(t, 120)
	bodies := forms.DefaultCluster.EventHubBodies(evs, 50)
	// Beside the audit bodies: one that is not an Event Hub body, one over the size bound.
	bodies = append(bodies, []byte(`{"value":"not resource logs"}`), []byte(`{"records":[`+strings.Repeat(" ", 700<<10)+`]}`))
	produce(t, cluster, roots, bodies)
	cfg := EventHubConfig{
		Brokers: cluster.ListenAddrs(), Topic: testHub, Group: "$Default", ConnectionString: testConnString,
		TLS: &tls.Config{RootCAs: roots}, FromStart: true, Limits: Limits{MaxRecordBytes: 512 << 10},
	}
	sink := &collector{}
	reg := runReader(t, cfg, sink, func() bool { return sink.count() >= len(evs) })
	if n := sink.count(); n != len(evs) {
		t.Errorf("%d events handed on, want %d", n, len(evs))
	}
	for _, tc := range []struct {
		labels []string
		want   float64
	}{
		{[]string{SourceEventHub, OutcomeAccepted, DeliveryOK}, 3},
		{[]string{SourceEventHub, OutcomeRejected, DeliveryMalformed}, 1},
		{[]string{SourceEventHub, OutcomeRejected, DeliveryTooLarge}, 1},
	} {
		got := counterValue(t, reg, "loopwatch_audit_source_deliveries_total", tc.labels...)
		if got != tc.want {
			t.Errorf("deliveries %v = %v, want %v", tc.labels, got, tc.want)
		}
	}
	if got := counterValue(t, reg, "loopwatch_audit_source_records_total", SourceEventHub, "decoded"); got != float64(len(evs)) {
		t.Errorf("decoded records %v, want %d", got, len(evs))
	}

	// Offsets were committed: a reader of the same group starts after them.
	produce(t, cluster, roots, forms.DefaultCluster.EventHubBodies(nativeEvents(t, 10), 50))
	again := &collector{}
	runReader(t, cfg, again, func() bool { return again.count() >= 10 })
	time.Sleep(200 * time.Millisecond)
	if n := again.count(); n != 10 {
		t.Errorf("a restarted reader handed on %d events, want only the 10 new ones", n)
	}
}

func TestEventHubReaderWithAWrongConnectionStringReadsNothing(t *testing.T) {
	cluster, roots := eventHubCluster(t)
	produce(t, cluster, roots, forms.DefaultCluster.EventHubBodies(nativeEvents(t, 10), 50))
	sink := &collector{}
	cfg := EventHubConfig{
		Brokers: cluster.ListenAddrs(), Topic: testHub, ConnectionString: strings.Replace(testConnString, "c2VjcmV0", "d3Jvbmc=", 1),
		TLS: &tls.Config{RootCAs: roots}, FromStart: true,
	}
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger = slog.New(slog.DiscardHandler)
	r, err := NewEventHubReader(cfg, sink, m)
	if err != nil {
		t.Fatal(err)
	}
	// kfake closes the connection on refused SASL credentials, which looks like an unreachable
	// hub: the reader keeps retrying. (Kafka brokers and Event Hubs answer
	// SASL_AUTHENTICATION_FAILED instead, which ends Run with an error: the exporter command's
	// TestExporterCommandStopsWhenTheEventHubRefusesItsCredentials makes kfake answer so.)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := r.Run(ctx); err != nil {
		t.Errorf("Run: %v", err)
	}
	if n := sink.count(); n != 0 {
		t.Errorf("%d events read with a wrong connection string", n)
	}
	if n := counterValue(t, reg, "loopwatch_audit_source_deliveries_total", SourceEventHub, OutcomeRejected, DeliveryConnectError); n < 1 {
		t.Errorf("connect errors counted %v, want at least 1", n)
	}
}

func counterValue(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			vals := map[string]bool{}
			for _, l := range m.GetLabel() {
				vals[l.GetValue()] = true
			}
			for _, l := range labels {
				if !vals[l] {
					continue metrics
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}
