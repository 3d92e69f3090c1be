package cli

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/loopwatch/loopwatch/exporter"
	"github.com/loopwatch/loopwatch/exporter/managed"
)

// managedFlags are the exporter's managed-cluster sources.
type managedFlags struct {
	firehoseKeyFile string

	pubsubAudience, pubsubServiceAccount, pubsubJWKSURL, pubsubJWKSFile, pubsubSecretFile string

	eventHubBrokers             []string
	eventHubName, eventHubGroup string
	eventHubConnFile            string
	eventHubCAFile              string
	eventHubFromStart           bool
}

func (m *managedFlags) bind(fs *pflag.FlagSet) {
	fs.StringVar(&m.firehoseKeyFile, "firehose-access-key-file", "", "EKS: serve Amazon Data Firehose HTTP endpoint deliveries on "+exporter.FirehosePath+"; the file holds the access key set on the stream's HTTP endpoint")
	fs.StringVar(&m.pubsubAudience, "pubsub-audience", "", "GKE: serve Pub/Sub pushes on "+exporter.PubSubPath+", authenticated by OIDC tokens with this audience")
	fs.StringVar(&m.pubsubServiceAccount, "pubsub-service-account", "", "GKE: the push subscription's service account, checked against the tokens' email")
	fs.StringVar(&m.pubsubJWKSURL, "pubsub-jwks-url", managed.GoogleCertsURL, "GKE: where Google publishes the keys that sign push tokens")
	fs.StringVar(&m.pubsubJWKSFile, "pubsub-jwks-file", "", "GKE: a local copy of those keys (JWKS), used instead of --pubsub-jwks-url")
	fs.StringVar(&m.pubsubSecretFile, "pubsub-secret-file", "", "GKE: serve Pub/Sub pushes on "+exporter.PubSubPath+", authenticated by this shared secret in the push URL (?token=...)")
	fs.StringSliceVar(&m.eventHubBrokers, "eventhub-brokers", nil, "AKS: the Event Hubs namespace's Kafka endpoint, <namespace>.servicebus.windows.net:9093")
	fs.StringVar(&m.eventHubName, "eventhub-name", "", "AKS: the event hub the cluster's diagnostic setting streams kube-audit to")
	fs.StringVar(&m.eventHubGroup, "eventhub-consumer-group", "$Default", "AKS: the event hub's consumer group")
	fs.StringVar(&m.eventHubConnFile, "eventhub-connection-string-file", "", "AKS: file holding the connection string (SASL PLAIN password, user $ConnectionString)")
	fs.StringVar(&m.eventHubCAFile, "eventhub-ca-file", "", "AKS: CA bundle that verifies the Kafka endpoint (system roots when empty)")
	fs.BoolVar(&m.eventHubFromStart, "eventhub-from-start", false, "AKS: a consumer group without committed offsets starts at the oldest retained event, not the newest")
}

func (m *managedFlags) any() bool {
	return m.firehoseKeyFile != "" || m.pubsubAudience != "" || m.pubsubSecretFile != "" || len(m.eventHubBrokers) > 0
}

func (m *managedFlags) firehose() *exporter.FirehoseConfig {
	if m.firehoseKeyFile == "" {
		return nil
	}
	return &exporter.FirehoseConfig{AccessKeyFile: m.firehoseKeyFile}
}

func (m *managedFlags) pubSub() *exporter.PubSubConfig {
	if m.pubsubAudience == "" && m.pubsubSecretFile == "" {
		return nil
	}
	return &exporter.PubSubConfig{
		Audience: m.pubsubAudience, ServiceAccountEmail: m.pubsubServiceAccount,
		JWKSURL: m.pubsubJWKSURL, JWKSFile: m.pubsubJWKSFile, SecretFile: m.pubsubSecretFile,
	}
}

// eventHub builds the Event Hub reader, or nil when none is configured.
func (m *managedFlags) eventHub(e *exporter.Exporter, maxValueBytes int, log *slog.Logger) (*managed.EventHubReader, error) {
	if len(m.eventHubBrokers) == 0 {
		return nil, nil
	}
	cfg := managed.EventHubConfig{
		Brokers: m.eventHubBrokers, Topic: m.eventHubName, Group: m.eventHubGroup, FromStart: m.eventHubFromStart,
		Limits: managed.Limits{MaxValueBytes: maxValueBytes}, Logger: log,
	}
	if m.eventHubConnFile != "" {
		b, err := os.ReadFile(m.eventHubConnFile)
		if err != nil {
			return nil, fmt.Errorf("read event hub connection string file: %w", err)
		}
		cfg.ConnectionString = strings.TrimSpace(string(b))
	}
	if m.eventHubCAFile != "" {
		pem, err := os.ReadFile(m.eventHubCAFile)
		if err != nil {
			return nil, fmt.Errorf("read event hub CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("event hub CA file %q holds no PEM certificate", m.eventHubCAFile)
		}
		cfg.TLS = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return managed.NewEventHubReader(cfg, e, e.SourceMetrics())
}
