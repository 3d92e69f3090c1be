package exporter

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/loopwatch/loopwatch/exporter/managed"
)

// The managed-cluster sources served over HTTP, beside the webhook and with its bounds: EKS
// audit events through Amazon Data Firehose's HTTP endpoint delivery, GKE's through a Pub/Sub
// push subscription. Each authenticates its sender its own way, then receives the body like the
// webhook (byte budget, deadline, minimum rate, before a processing slot), decodes it with
// package managed, and answers as its sender expects. (AKS is read from its Event Hub instead:
// managed.EventHubReader.)

// Paths of the sources.
const (
	FirehosePath = "/firehose"
	PubSubPath   = "/pubsub"
)

// FirehoseConfig configures the Firehose endpoint (EKS).
type FirehoseConfig struct {
	// AccessKeyFile holds the access key set on the Firehose stream's HTTP endpoint destination;
	// Firehose sends it verbatim in X-Amz-Firehose-Access-Key.
	AccessKeyFile string
}

// PubSubConfig configures the Pub/Sub push endpoint (GKE): OIDC tokens, a shared secret in the
// push URL, or both.
type PubSubConfig struct {
	// Audience is the aud of the push subscription's OIDC tokens (its --push-auth-token-audience,
	// or the push endpoint URL when that is unset); empty disables OIDC.
	Audience string
	// ServiceAccountEmail is the subscription's --push-auth-service-account, checked against the
	// tokens' email when set.
	ServiceAccountEmail string
	// JWKSURL is where Google publishes its signing keys (managed.GoogleCertsURL when empty);
	// JWKSFile, when set, is a local copy used instead (no network).
	JWKSURL, JWKSFile string
	// SecretFile holds a shared secret the push endpoint URL carries as ?token=…; empty disables it.
	SecretFile string
}

// sources are the HTTP sources a server serves.
type sources struct {
	firehoseKey []byte
	push        *managed.PushVerifier
	decoders    sync.Pool
	// Request IDs of accepted Firehose requests and message IDs of accepted pushes.
	firehoseIDs, pushIDs *managed.RecentIDs
}

// loadSources reads the sources' credentials; problems are appended to errs.
func loadSources(cfg ServerConfig, e *Exporter, errs *[]error) *sources {
	src := &sources{firehoseIDs: managed.NewRecentIDs(0), pushIDs: managed.NewRecentIDs(0)}
	src.decoders.New = func() any {
		d := managed.NewDecoder(managed.Limits{MaxValueBytes: e.limits.MaxValueBytes})
		d.Flush = e.ObserveEvents // a large delivery's events in chunks, not all at once
		return d
	}
	if f := cfg.Firehose; f != nil {
		b, err := os.ReadFile(f.AccessKeyFile)
		switch {
		case err != nil:
			*errs = append(*errs, fmt.Errorf("read firehose access key file: %w", err))
		case len(strings.TrimSpace(string(b))) == 0:
			*errs = append(*errs, fmt.Errorf("firehose access key file %q is empty", f.AccessKeyFile))
		default:
			src.firehoseKey = []byte(strings.TrimSpace(string(b)))
		}
		e.sources.Init(managed.SourceFirehose, sourceRejectReasons...)
	}
	if p := cfg.PubSub; p != nil {
		auth := managed.PushAuth{Audience: p.Audience, ServiceAccountEmail: p.ServiceAccountEmail}
		if p.SecretFile != "" {
			b, err := os.ReadFile(p.SecretFile)
			if err != nil {
				*errs = append(*errs, fmt.Errorf("read pub/sub push secret file: %w", err))
			} else if auth.Secret = []byte(strings.TrimSpace(string(b))); len(auth.Secret) == 0 {
				*errs = append(*errs, fmt.Errorf("pub/sub push secret file %q is empty", p.SecretFile))
			}
		}
		if p.Audience != "" {
			switch {
			case p.JWKSFile != "":
				b, err := os.ReadFile(p.JWKSFile)
				if err != nil {
					*errs = append(*errs, fmt.Errorf("read pub/sub jwks file: %w", err))
					break
				}
				keys, err := managed.ParseJWKS(b)
				if err != nil {
					*errs = append(*errs, fmt.Errorf("pub/sub jwks file %q: %w", p.JWKSFile, err))
					break
				}
				auth.Keys = keys.Key
			default:
				url := p.JWKSURL
				if url == "" {
					url = managed.GoogleCertsURL
				}
				auth.Keys = (&managed.KeySource{URL: url}).Key
			}
		}
		v, err := managed.NewPushVerifier(auth)
		if err != nil {
			*errs = append(*errs, err)
		}
		src.push = v
		e.sources.Init(managed.SourcePubSub, sourceRejectReasons...)
	}
	return src
}

// sourceRejectReasons are the reasons a source's delivery is refused, initialised at 0.
var sourceRejectReasons = []string{
	ReasonUnauthenticated, ReasonForbidden, ReasonMethodNotAllowed, ReasonUnsupportedMediaType,
	ReasonTooLarge, ReasonMalformed, ReasonOverloaded, ReasonSlowBody,
}

// delivery is one source request being served: its source, how to answer, and its counting.
type delivery struct {
	s      *Server
	w      http.ResponseWriter
	source string
	// answer writes the response in the sender's format.
	answer func(w http.ResponseWriter, status int, msg string)
}

func (d *delivery) reject(status int, reason, msg string) {
	d.s.exporter.sources.Delivery(d.source, managed.OutcomeRejected, reason)
	d.answer(d.w, status, msg)
}

// receive checks method and content type and receives the body; nil when it answered already.
func (d *delivery) receive(r *http.Request) *body {
	if r.Method != http.MethodPost {
		d.w.Header().Set("Allow", http.MethodPost)
		d.reject(http.StatusMethodNotAllowed, ReasonMethodNotAllowed, "deliveries must be posted")
		return nil
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		d.reject(http.StatusUnsupportedMediaType, ReasonUnsupportedMediaType, "content type must be application/json")
		return nil
	}
	b, rerr := d.s.receiver.receive(d.w, r)
	if rerr != nil {
		if rerr.status == http.StatusTooManyRequests {
			d.w.Header().Set("Retry-After", "1")
		}
		d.reject(rerr.status, rerr.reason, rerr.Error())
		return nil
	}
	return b
}

// process takes a processing slot and runs read with a decoder; false when it answered already.
func (d *delivery) process(ctx context.Context, read func(dec *managed.Decoder)) bool {
	if !d.s.acquire(ctx) {
		d.w.Header().Set("Retry-After", "1")
		d.reject(http.StatusTooManyRequests, ReasonOverloaded, "too many deliveries in flight")
		return false
	}
	defer func() { <-d.s.inFlight }()
	dec := d.s.sources.decoders.Get().(*managed.Decoder)
	defer d.s.sources.decoders.Put(dec)
	dec.Reset()
	read(dec)
	return true
}

// accept hands a delivery's events to the pipeline and counts it and its records.
func (d *delivery) accept(dec *managed.Decoder) {
	if len(dec.Events) > 0 {
		d.s.exporter.ObserveEvents(dec.Events)
	}
	d.s.exporter.sources.Records(d.source, &dec.Tally)
	d.s.exporter.sources.Delivery(d.source, managed.OutcomeAccepted, managed.DeliveryOK)
}

// firehoseAnswer writes the response Firehose expects: JSON echoing the request ID, with the
// time in milliseconds and, on failure, an error message. Anything but 200 makes Firehose retry.
func firehoseAnswer(requestID string) func(w http.ResponseWriter, status int, msg string) {
	return func(w http.ResponseWriter, status int, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		b := fmt.Appendf(nil, `{"requestId":%s,"timestamp":%d`, strconv.Quote(requestID), time.Now().UnixMilli())
		if status != http.StatusOK {
			b = fmt.Appendf(b, `,"errorMessage":%s`, strconv.Quote(msg))
		}
		_, _ = w.Write(append(b, "}\n"...))
	}
}

// serveFirehose takes one Firehose HTTP endpoint delivery (EKS audit events through a CloudWatch
// Logs subscription filter).
func (s *Server) serveFirehose(w http.ResponseWriter, r *http.Request) {
	// The header's request ID is echoed until the body's is read; it is the same on every attempt.
	headerID := r.Header.Get("X-Amz-Firehose-Request-Id")
	if len(headerID) > 256 {
		headerID = headerID[:256]
	}
	d := &delivery{s: s, w: w, source: managed.SourceFirehose, answer: firehoseAnswer(headerID)}
	key := r.Header.Get("X-Amz-Firehose-Access-Key")
	switch {
	case key == "":
		d.reject(http.StatusUnauthorized, ReasonUnauthenticated, "no access key")
		return
	case subtle.ConstantTimeCompare([]byte(key), s.sources.firehoseKey) != 1:
		d.reject(http.StatusForbidden, ReasonForbidden, "wrong access key")
		return
	}
	b := d.receive(r)
	if b == nil {
		return
	}
	defer b.release()
	d.process(r.Context(), func(dec *managed.Decoder) {
		data := b.data
		if strings.EqualFold(r.Header.Get("Content-Encoding"), "gzip") {
			var err error
			if data, err = dec.Inflate(data, int(s.cfg.MaxBodyBytes)); err != nil {
				if managed.IsTooLarge(err) {
					d.reject(http.StatusRequestEntityTooLarge, ReasonTooLarge, err.Error())
				} else {
					d.reject(http.StatusBadRequest, ReasonMalformed, err.Error())
				}
				return
			}
		}
		req, err := dec.Firehose(data)
		if err != nil {
			s.log.Debug("Firehose request refused", "requestId", headerID, "err", err)
			d.reject(http.StatusBadRequest, ReasonMalformed, err.Error())
			return
		}
		d.answer = firehoseAnswer(string(req.ID))
		if s.sources.firehoseIDs.Seen(req.ID) {
			s.exporter.sources.Delivery(d.source, managed.OutcomeDuplicate, managed.DeliveryRepeated)
			d.answer(w, http.StatusOK, "")
			return
		}
		d.accept(dec)
		s.sources.firehoseIDs.Add(req.ID)
		d.answer(w, http.StatusOK, "")
	})
}

// pubSubAnswer answers a push: 204 acknowledges it; any other status makes Pub/Sub redeliver it
// later (with backoff).
func pubSubAnswer(w http.ResponseWriter, status int, msg string) {
	if status == http.StatusNoContent {
		w.WriteHeader(status)
		return
	}
	http.Error(w, msg, status)
}

// servePubSub takes one Pub/Sub push (a GKE Cloud Audit Logs entry routed by a log sink).
func (s *Server) servePubSub(w http.ResponseWriter, r *http.Request) {
	d := &delivery{s: s, w: w, source: managed.SourcePubSub, answer: pubSubAnswer}
	if err := s.sources.push.Verify(r); err != nil {
		s.log.Debug("Pub/Sub push refused", "err", err)
		if errors.Is(err, managed.ErrNoCredentials) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="loopwatch-audit"`)
			d.reject(http.StatusUnauthorized, ReasonUnauthenticated, http.StatusText(http.StatusUnauthorized))
		} else {
			d.reject(http.StatusForbidden, ReasonForbidden, http.StatusText(http.StatusForbidden))
		}
		return
	}
	b := d.receive(r)
	if b == nil {
		return
	}
	defer b.release()
	d.process(r.Context(), func(dec *managed.Decoder) {
		msg, err := dec.PubSubPush(b.data)
		if err != nil {
			// Not a push at all: refused, so that it ends in the subscription's dead-letter topic
			// rather than being dropped unseen.
			s.log.Debug("Pub/Sub push refused", "err", err)
			d.reject(http.StatusBadRequest, ReasonMalformed, err.Error())
			return
		}
		if s.sources.pushIDs.Seen(msg.ID) {
			s.exporter.sources.Delivery(d.source, managed.OutcomeDuplicate, managed.DeliveryRepeated)
			d.answer(w, http.StatusNoContent, "")
			return
		}
		// A push whose entry is not an audit event, or cannot be mapped, is acknowledged and
		// counted by reason: redelivering it would not change it.
		d.accept(dec)
		s.sources.pushIDs.Add(msg.ID)
		d.answer(w, http.StatusNoContent, "")
	})
}
