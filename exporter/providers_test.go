package exporter

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/loopwatch/loopwatch/exporter/analyze"
	"github.com/loopwatch/loopwatch/exporter/managed"
	"github.com/loopwatch/loopwatch/exporter/track"
	"github.com/loopwatch/loopwatch/internal/serve"
)

// The test data of the managed-cluster sources (testdata/providers, see its README): the audit
// log a real kube-apiserver wrote during the integration scenario — a fight, a replica race of
// two pods with conflicts, a hot object — and each provider's forms of the same events.

const providersDir = "testdata/providers"

// providerForm is one form's test data file.
type providerForm struct {
	provider, form, path string
	// keepsPods: the form carries user.extra, so replicas of one service account are told apart.
	keepsPods bool
}

// providerForms lists every form's file.
func providerForms(t *testing.T) []providerForm {
	t.Helper()
	var out []providerForm
	err := filepath.WalkDir(providersDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, ".md") || strings.Contains(path, "/native/") {
			return err
		}
		rel, _ := filepath.Rel(providersDir, path)
		provider, rest, _ := strings.Cut(filepath.ToSlash(rel), "/")
		form := strings.SplitN(rest, "/", 2)[0]
		out = append(out, providerForm{provider: provider, form: form, path: path, keepsPods: provider != "gke"})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 8 {
		t.Fatalf("found %d forms under %s, want the 8 the providers document", len(out), providersDir)
	}
	return out
}

// findings are what the tests compare across forms: the fight pair, hot objects, replica
// races, 409s and write counts per actor.
type findings struct {
	Fights     []string
	HotObjects []string
	Races      []string
	Conflicts  []string
	Writers    []string
}

func findingsOf(rep *analyze.Report) findings {
	var f findings
	for _, x := range rep.Fights {
		f.Fights = append(f.Fights, fmt.Sprintf("%s %s<->%s handoffs=%d", x.Object, x.ActorA, x.ActorB, x.Handoffs))
	}
	for _, x := range rep.HotObjects {
		f.HotObjects = append(f.HotObjects, fmt.Sprintf("%s by %s writes=%d", x.Object, x.Actor, x.Writes))
	}
	for _, x := range rep.Races {
		f.Races = append(f.Races, fmt.Sprintf("%s by %s pods=%s writes=%d conflicts=%d", x.Object, x.Actor, strings.Join(x.Pods, ","), x.Writes, x.Conflicts))
	}
	for _, x := range rep.Conflicts {
		f.Conflicts = append(f.Conflicts, fmt.Sprintf("%s %d %v", x.Actor, x.Conflicts, x.Resources))
	}
	for _, x := range rep.TopWriters {
		f.Writers = append(f.Writers, fmt.Sprintf("%s writes=%d failed=%d conflicts=%d %v", x.Actor, x.Writes, x.Failed, x.Conflicts, x.Verbs))
	}
	return f
}

func providersTrackerConfig() track.Config {
	c := itTrackerConfig()
	c.OffenderTTL = 100 * 365 * 24 * time.Hour
	return c
}

func analyzeFile(t *testing.T, path string) *analyze.Report {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := analyze.Analyze(f, analyze.Options{Tracker: itTrackerConfig(), TopWriters: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// nativeFindings are the findings of the native log, checked against what the scenario did.
func nativeFindings(t *testing.T) (*analyze.Report, findings) {
	t.Helper()
	rep := analyzeFile(t, filepath.Join(providersDir, "native", "audit.jsonl"))
	want := findingsOf(rep)
	if len(want.Fights) != 1 || len(want.HotObjects) != 1 || len(want.Races) != 1 || len(want.Conflicts) != 1 ||
		!strings.Contains(want.Races[0], "pods=syncer-0,syncer-1") || !strings.Contains(want.Conflicts[0], "syncer 4 ") {
		t.Fatalf("the native log does not show the scenario: %+v", want)
	}
	return rep, want
}

// withoutPods is what a form without user.extra must find: the same, no replica race.
func withoutPods(f findings) findings {
	f.Races = nil
	return f
}

// TestEveryProviderFormGivesTheNativeFindings: `audit analyze` recognises each provider form by
// itself and finds in it what it finds in the API server's own log.
func TestEveryProviderFormGivesTheNativeFindings(t *testing.T) {
	native, want := nativeFindings(t)
	for _, pf := range providerForms(t) {
		t.Run(pf.provider+"/"+pf.form, func(t *testing.T) {
			rep := analyzeFile(t, pf.path)
			w := want
			if !pf.keepsPods {
				w = withoutPods(want)
			}
			if got := findingsOf(rep); fmt.Sprint(got) != fmt.Sprint(w) {
				t.Errorf("findings differ from the native log's:\n got %+v\nwant %+v", got, w)
			}
			if rep.Events != native.Events || rep.Writes != native.Writes {
				t.Errorf("%d events (%d writes), the native log %d (%d)", rep.Events, rep.Writes, native.Events, native.Writes)
			}
			if rep.Skipped.Lines != 0 {
				t.Errorf("skipped %+v", rep.Skipped)
			}
			if len(rep.Forms) != 1 {
				t.Errorf("read as %v, want one form", rep.Forms)
			}
		})
	}
}

// The live receivers: Firehose (EKS) and Pub/Sub push (GKE) on a real TLS listener.

// oidcSigner signs Pub/Sub-style OIDC tokens with a key published in a JWKS file.
type oidcSigner struct {
	key      *rsa.PrivateKey
	kid      string
	jwksFile string
}

func newOIDCSigner(t *testing.T) *oidcSigner {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	s := &oidcSigner{key: key, kid: "test-key-1", jwksFile: filepath.Join(t.TempDir(), "jwks.json")}
	jwks := fmt.Sprintf(`{"keys":[{"kty":"RSA","alg":"RS256","use":"sig","kid":%q,"n":%q,"e":%q}]}`, s.kid,
		base64.RawURLEncoding.EncodeToString(key.N.Bytes()), base64.RawURLEncoding.EncodeToString(big.NewInt(int64(key.E)).Bytes()))
	if err := os.WriteFile(s.jwksFile, []byte(jwks), 0o600); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *oidcSigner) token(t *testing.T, claims map[string]any) string {
	t.Helper()
	seg := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	signing := seg(map[string]any{"alg": "RS256", "kid": s.kid, "typ": "JWT"}) + "." + seg(claims)
	h := sha256.Sum256([]byte(signing))
	sig, err := rsa.SignPKCS1v15(rand.Reader, s.key, crypto.SHA256, h[:])
	if err != nil {
		t.Fatal(err)
	}
	return signing + "." + base64.RawURLEncoding.EncodeToString(sig)
}

const (
	testPushAudience = "https://loopwatch.example/pubsub"
	testPushAccount  = "audit-push@loopwatch-test.iam.gserviceaccount.com"
)

func (s *oidcSigner) goodClaims() map[string]any {
	now := time.Now()
	return map[string]any{
		"iss": "https://accounts.google.com", "aud": testPushAudience, "email": testPushAccount, "email_verified": true,
		"iat": now.Add(-time.Minute).Unix(), "exp": now.Add(time.Hour).Unix(), "sub": "1234567890",
	}
}

func readLines(t *testing.T, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		out = append(out, slices.Clone(sc.Bytes()))
	}
	return out
}

// TestManagedSourcesOnTLS serves the Firehose and Pub/Sub endpoints on a real TLS listener,
// delivers the test data as the providers do — every Firehose request twice, as a retry would —
// and checks the answers, the refusals of bad credentials, and that the exporter finds what the
// native log shows.
func TestManagedSourcesOnTLS(t *testing.T) {
	_, want := nativeFindings(t)
	pki := newTestPKI(t)
	dir := t.TempDir()
	keyFile, secretFile := filepath.Join(dir, "firehose-key"), filepath.Join(dir, "push-secret")
	if err := os.WriteFile(keyFile, []byte("firehose-access-key-123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secretFile, []byte("push-secret-456"), 0o600); err != nil {
		t.Fatal(err)
	}
	signer := newOIDCSigner(t)

	// One exporter per provider, so that each finds the scenario on its own.
	serve := func(t *testing.T) (*Exporter, string, *http.Client) {
		reg := prometheus.NewRegistry()
		nativeLast := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
		e, err := New(Config{Registerer: reg, Tracker: providersTrackerConfig(), Logger: slog.New(slog.DiscardHandler), Now: func() time.Time { return nativeLast }})
		if err != nil {
			t.Fatal(err)
		}
		srv, err := NewServer(ServerConfig{
			Addr: "127.0.0.1:0", TLSCertFile: pki.certFile, TLSKeyFile: pki.keyFile, DisableWebhook: true, MetricsOpen: true,
			Firehose: &FirehoseConfig{AccessKeyFile: keyFile},
			PubSub:   &PubSubConfig{Audience: testPushAudience, ServiceAccountEmail: testPushAccount, JWKSFile: signer.jwksFile, SecretFile: secretFile},
			Gatherer: reg, Logger: slog.New(slog.DiscardHandler),
		}, e)
		if err != nil {
			t.Fatal(err)
		}
		addr := serve.Loopback(t, srv)
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pki.roots}}}
		return e, "https://" + addr, client
	}
	post := func(t *testing.T, c *http.Client, url string, body []byte, header map[string]string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	trackerFindings := func(e *Exporter) findings {
		var f findings
		tr := e.Tracker()
		tr.Flush() // the end of the stream: the writes still waiting for later ones are taken
		for _, x := range tr.Fights() {
			f.Fights = append(f.Fights, fmt.Sprintf("%s %s<->%s handoffs=%d", x.Object, x.ActorA, x.ActorB, x.Handoffs))
		}
		for _, x := range tr.HotObjects() {
			f.HotObjects = append(f.HotObjects, fmt.Sprintf("%s by %s writes=%d", x.Object, x.Actor, x.Writes))
		}
		for _, x := range tr.Races() {
			f.Races = append(f.Races, fmt.Sprintf("%s by %s pods=%s writes=%d conflicts=%d", x.Object, x.Actor, strings.Join(x.Pods, ","), x.Writes, x.Conflicts))
		}
		return f
	}
	liveWant := func(w findings) findings { return findings{Fights: w.Fights, HotObjects: w.HotObjects, Races: w.Races} }

	t.Run("eks firehose", func(t *testing.T) {
		e, base, c := serve(t)
		url := base + FirehosePath
		bodies := readLines(t, filepath.Join(providersDir, "eks", "firehose-requests.jsonl"))
		var first struct{ RequestID string }
		if err := json.Unmarshal(bodies[0], &first); err != nil {
			t.Fatal(err)
		}
		hdr := func(key string) map[string]string {
			return map[string]string{"X-Amz-Firehose-Access-Key": key, "X-Amz-Firehose-Request-Id": first.RequestID, "X-Amz-Firehose-Protocol-Version": "1.0"}
		}
		for _, bad := range []struct {
			name   string
			header map[string]string
			status int
		}{
			{"no access key", map[string]string{"X-Amz-Firehose-Request-Id": first.RequestID}, http.StatusUnauthorized},
			{"a wrong access key", hdr("firehose-access-key-124"), http.StatusForbidden},
		} {
			status, resp := post(t, c, url, bodies[0], bad.header)
			var answer struct {
				RequestID    string
				Timestamp    int64
				ErrorMessage string
			}
			if err := json.Unmarshal(resp, &answer); err != nil || status != bad.status || answer.RequestID != first.RequestID || answer.Timestamp == 0 || answer.ErrorMessage == "" {
				t.Errorf("%s: answered %d %s, want %d with the request ID, a timestamp and an error message", bad.name, status, resp, bad.status)
			}
		}
		for i, body := range bodies {
			var req struct{ RequestID string }
			_ = json.Unmarshal(body, &req)
			h := map[string]string{
				"X-Amz-Firehose-Access-Key": "firehose-access-key-123", "X-Amz-Firehose-Request-Id": req.RequestID, "X-Amz-Firehose-Protocol-Version": "1.0",
			}
			if i%2 == 1 { // the stream's GZIP content encoding
				var zb bytes.Buffer
				zw := gzip.NewWriter(&zb)
				_, _ = zw.Write(body)
				_ = zw.Close()
				body, h["Content-Encoding"] = zb.Bytes(), "gzip"
			}
			for attempt := range 2 { // a retry reuses the request ID
				status, resp := post(t, c, url, body, h)
				var answer map[string]any
				if err := json.Unmarshal(resp, &answer); err != nil || status != http.StatusOK || answer["requestId"] != req.RequestID || answer["timestamp"] == nil || len(answer) != 2 {
					t.Fatalf("request %d attempt %d: answered %d %s, want 200 {requestId, timestamp}", i, attempt, status, resp)
				}
			}
		}
		if got := trackerFindings(e); fmt.Sprint(got) != fmt.Sprint(liveWant(want)) {
			t.Errorf("findings differ from the native log's:\n got %+v\nwant %+v", got, liveWant(want))
		}
		metrics := httpGet(t, base+"/metrics", pki)
		for _, line := range []string{
			fmt.Sprintf(`loopwatch_audit_source_deliveries_total{outcome="accepted",reason="ok",source="eks_firehose"} %d`, len(bodies)),
			fmt.Sprintf(`loopwatch_audit_source_deliveries_total{outcome="duplicate",reason="repeated_id",source="eks_firehose"} %d`, len(bodies)),
			`loopwatch_audit_source_deliveries_total{outcome="rejected",reason="forbidden",source="eks_firehose"} 1`,
			`loopwatch_audit_source_deliveries_total{outcome="rejected",reason="unauthenticated",source="eks_firehose"} 1`,
			`loopwatch_audit_source_records_total{reason="control_message",source="eks_firehose"} 1`,
		} {
			if !strings.Contains(metrics, line) {
				t.Errorf("/metrics lacks %s", line)
			}
		}
	})

	t.Run("gke pubsub push", func(t *testing.T) {
		e, base, c := serve(t)
		url := base + PubSubPath
		bodies := readLines(t, filepath.Join(providersDir, "gke", "pubsub-push.jsonl"))
		good := signer.token(t, signer.goodClaims())
		claims := func(change func(map[string]any)) string {
			c := signer.goodClaims()
			change(c)
			return "Bearer " + signer.token(t, c)
		}
		other := newOIDCSigner(t)
		for _, bad := range []struct {
			name   string
			url    string
			header map[string]string
			status int
		}{
			{"no credentials", url, nil, http.StatusUnauthorized},
			{"a token of another audience", url, map[string]string{"Authorization": claims(func(c map[string]any) { c["aud"] = "https://elsewhere.example" })}, http.StatusForbidden},
			{"an expired token", url, map[string]string{"Authorization": claims(func(c map[string]any) { c["exp"] = time.Now().Add(-time.Hour).Unix() })}, http.StatusForbidden},
			{"a token of another account", url, map[string]string{"Authorization": claims(func(c map[string]any) { c["email"] = "someone@example.com" })}, http.StatusForbidden},
			{"a token of another issuer", url, map[string]string{"Authorization": claims(func(c map[string]any) { c["iss"] = "https://evil.example" })}, http.StatusForbidden},
			{"a token signed by another key", url, map[string]string{"Authorization": "Bearer " + other.token(t, signer.goodClaims())}, http.StatusForbidden},
			{"a wrong secret", url + "?token=push-secret-457", nil, http.StatusForbidden},
		} {
			if status, resp := post(t, c, bad.url, bodies[0], bad.header); status != bad.status {
				t.Errorf("%s: answered %d %s, want %d", bad.name, status, resp, bad.status)
			}
		}
		for i, body := range bodies {
			// Half the pushes with the OIDC token, half with the secret in the URL; each twice,
			// as an at-least-once redelivery would.
			u, h := url, map[string]string{"Authorization": "Bearer " + good}
			if i%2 == 1 {
				u, h = url+"?token=push-secret-456", nil
			}
			for attempt := range 2 {
				if status, resp := post(t, c, u, body, h); status != http.StatusNoContent {
					t.Fatalf("push %d attempt %d: answered %d %s, want 204", i, attempt, status, resp)
				}
			}
		}
		if got, w := trackerFindings(e), liveWant(withoutPods(want)); fmt.Sprint(got) != fmt.Sprint(w) {
			t.Errorf("findings differ from the native log's:\n got %+v\nwant %+v", got, w)
		}
		metrics := httpGet(t, base+"/metrics", pki)
		for _, line := range []string{
			fmt.Sprintf(`loopwatch_audit_source_deliveries_total{outcome="accepted",reason="ok",source="gke_pubsub"} %d`, len(bodies)),
			fmt.Sprintf(`loopwatch_audit_source_deliveries_total{outcome="duplicate",reason="repeated_id",source="gke_pubsub"} %d`, len(bodies)),
			`loopwatch_audit_source_deliveries_total{outcome="rejected",reason="forbidden",source="gke_pubsub"} 6`,
			`loopwatch_audit_source_deliveries_total{outcome="rejected",reason="unauthenticated",source="gke_pubsub"} 1`,
			fmt.Sprintf(`loopwatch_audit_source_records_total{reason="decoded",source="gke_pubsub"} %d`, len(bodies)),
		} {
			if !strings.Contains(metrics, line) {
				t.Errorf("/metrics lacks %s", line)
			}
		}
	})
}

// TestEventHubSourceOnKafka delivers the AKS test data's Event Hub bodies through a
// Kafka-protocol cluster set up as Event Hubs' endpoint is (franz-go's in-process kfake: TLS,
// SASL PLAIN with user $ConnectionString) to the exporter's Event Hub reader, and checks that the
// exporter finds what the native log shows, pods included.
func TestEventHubSourceOnKafka(t *testing.T) {
	_, want := nativeFindings(t)
	pki := newTestPKI(t)
	cert, err := tls.LoadX509KeyPair(pki.certFile, pki.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	const hub, conn = "aks-audit", "Endpoint=sb://loopwatch-test.servicebus.windows.net/;SharedAccessKeyName=listen;SharedAccessKey=c2VjcmV0"
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, hub),
		kfake.TLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}),
		kfake.EnableSASL(), kfake.Superuser("PLAIN", "$ConnectionString", conn))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	clientTLS := &tls.Config{RootCAs: pki.roots}
	producer, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.DialTLSConfig(clientTLS),
		kgo.SASL(plain.Auth{User: "$ConnectionString", Pass: conn}.AsMechanism()), kgo.DefaultProduceTopic(hub))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bodies := readLines(t, filepath.Join(providersDir, "aks", "eventhub-bodies.jsonl"))
	for _, body := range bodies {
		// Azure Monitor spreads a hub's events over its partitions: so does the round robin here.
		if err := producer.ProduceSync(ctx, &kgo.Record{Value: body}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	producer.Close()

	reg := prometheus.NewRegistry()
	e, err := New(Config{Registerer: reg, Tracker: providersTrackerConfig(), Logger: slog.New(slog.DiscardHandler),
		Now: func() time.Time { return time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	reader, err := managed.NewEventHubReader(managed.EventHubConfig{
		Brokers: cluster.ListenAddrs(), Topic: hub, Group: "loopwatch", ConnectionString: conn, TLS: clientTLS,
		FromStart: true, Logger: slog.New(slog.DiscardHandler),
	}, e, e.SourceMetrics())
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- reader.Run(rctx) }()
	accepted := func() float64 {
		return testutil.ToFloat64(e.SourceMetrics().DeliveryCounter(managed.SourceEventHub, managed.OutcomeAccepted, managed.DeliveryOK))
	}
	for accepted() < float64(len(bodies)) {
		if ctx.Err() != nil {
			t.Fatalf("%v of %d event hub events read within 30s", accepted(), len(bodies))
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var got findings
	tr := e.Tracker()
	tr.Flush() // the end of the stream: the writes still waiting for later ones are taken
	for _, x := range tr.Fights() {
		got.Fights = append(got.Fights, fmt.Sprintf("%s %s<->%s handoffs=%d", x.Object, x.ActorA, x.ActorB, x.Handoffs))
	}
	for _, x := range tr.HotObjects() {
		got.HotObjects = append(got.HotObjects, fmt.Sprintf("%s by %s writes=%d", x.Object, x.Actor, x.Writes))
	}
	for _, x := range tr.Races() {
		got.Races = append(got.Races, fmt.Sprintf("%s by %s pods=%s writes=%d conflicts=%d", x.Object, x.Actor, strings.Join(x.Pods, ","), x.Writes, x.Conflicts))
	}
	if w := (findings{Fights: want.Fights, HotObjects: want.HotObjects, Races: want.Races}); fmt.Sprint(got) != fmt.Sprint(w) {
		t.Errorf("findings differ from the native log's:\n got %+v\nwant %+v", got, w)
	}
}
