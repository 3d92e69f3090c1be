// Package decode is a hand-written streaming decoder for audit.k8s.io/v1 events.
//
// It extracts only the fields the exporter needs (who wrote what, when, with which result) and
// validates the rest of the document without materialising it: requestObject, responseObject,
// annotations and every other field are scanned, never allocated. Strings are interned through a
// bounded interner, so a decoder at steady state allocates nothing per event.
package decode

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// Stage values of an audit event that the exporter distinguishes.
const (
	StageRequestReceived  = "RequestReceived"
	StageResponseStarted  = "ResponseStarted"
	StageResponseComplete = "ResponseComplete"
	StagePanic            = "Panic"
)

// MutationAnnotationPrefix starts the audit annotations the API server adds for each mutating
// admission webhook it calls on a write, "…round_<r>_index_<i>", whose value is the JSON of
// MutatingWebhook.
const MutationAnnotationPrefix = "mutation.webhook.admission.k8s.io/"

// PodNameExtraKey is the user.extra key under which a bound service-account token names its pod.
const PodNameExtraKey = "authentication.kubernetes.io/pod-name"

// Event holds the fields of one audit event that the exporter uses; which member of the event
// fills each one is declared in schema.go.
//
// Strings are interned and stay valid after the next decode; the event itself is reused by the
// decoder and must be copied if it is kept.
type Event struct {
	// AuditIDHash is a 64-bit hash of auditID (see HashAuditID); the ID itself is not kept because
	// it is unique per request and interning it would only churn the interner.
	AuditIDHash uint64
	// HasAuditID reports whether the event carried a non-empty auditID.
	HasAuditID bool

	Verb  string
	Stage string

	// Username is user.username; ImpersonatedUsername is impersonatedUser.username ("" when absent).
	Username             string
	ImpersonatedUsername string
	// Pod is the first value of user.extra["authentication.kubernetes.io/pod-name"].
	Pod string

	UserAgent string
	// FieldManager is the fieldManager query parameter of requestURI.
	FieldManager string
	// SendInitialEvents is the sendInitialEvents query parameter of requestURI.
	SendInitialEvents string
	// MutatingWebhook is the value of the last mutation.webhook.admission.k8s.io/round_*
	// annotation that says the webhook changed the object: {"configuration":…,"webhook":…,
	// "mutated":true} (see ParseMutatingWebhook); "" when no webhook changed it.
	MutatingWebhook string

	APIGroup    string
	Resource    string
	Namespace   string
	Name        string
	Subresource string

	// Code is responseStatus.code (0 when absent).
	Code int32

	RequestReceived time.Time
	StageTimestamp  time.Time
	// Timestamp is the deprecated "timestamp" of audit.k8s.io/v1beta1 events, which older API
	// servers wrote instead of the two above.
	Timestamp time.Time
}

// When is the event's time: its stage timestamp, else (events of older versions) its timestamp,
// else when the request was received; zero when it carries none.
func (e *Event) When() time.Time {
	switch {
	case !e.StageTimestamp.IsZero():
		return e.StageTimestamp
	case !e.Timestamp.IsZero():
		return e.Timestamp
	}
	return e.RequestReceived
}

// Attributable reports whether the event is counted at all: at a stage that completes a request,
// with a verb and an actor. Anything else (an empty object, another service's JSON) has nothing
// to attribute and is rejected before it costs a deduplication or tracking step.
func (e *Event) Attributable() bool {
	return e.Counts() && e.Verb != "" && (e.Username != "" || e.ImpersonatedUsername != "")
}

// Manager is the field manager the write is recorded under: the fieldManager query parameter,
// else what the API server derives from the user agent (its part before the first '/').
func (e *Event) Manager() string {
	if e.FieldManager != "" {
		return e.FieldManager
	}
	m, _, _ := strings.Cut(e.UserAgent, "/")
	return m
}

// ParseMutatingWebhook names the webhook of a MutatingWebhook value as
// "<configuration>/<webhook>", the names of the MutatingWebhookConfiguration and of its webhook;
// a value it cannot read (a shortened one, see Shorten) is returned as it is.
func ParseMutatingWebhook(value string) string {
	if value == "" {
		return ""
	}
	var a struct{ Configuration, Webhook string }
	if err := json.Unmarshal([]byte(value), &a); err != nil || a.Webhook == "" {
		return value
	}
	return a.Configuration + "/" + a.Webhook
}

// Actor is who the write is attributed to: the impersonated user when present, else the user.
func (e *Event) Actor() string {
	if e.ImpersonatedUsername != "" {
		return e.ImpersonatedUsername
	}
	return e.Username
}

// IsAuditEvent reports whether the decoded object is an audit event at all: every audit event
// names one of the four stages. Any other JSON object (a cloud provider's log entry wrapping an
// event, say) decodes without error but with none of an event's members.
func (e *Event) IsAuditEvent() bool {
	switch e.Stage {
	case StageRequestReceived, StageResponseStarted, StageResponseComplete, StagePanic:
		return true
	}
	return false
}

// Counts reports whether the event is at a stage that completes a request (ResponseComplete or
// Panic); only those are counted, so a request is never counted twice.
func (e *Event) Counts() bool {
	return e.Stage == StageResponseComplete || e.Stage == StagePanic
}

// IsWrite reports whether the verb changes state.
func (e *Event) IsWrite() bool {
	switch e.Verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

// IsConflict reports whether a write lost an optimistic-concurrency race: 409 on anything but a
// create (a create answered 409 is AlreadyExists, not a conflict).
func (e *Event) IsConflict() bool {
	return e.Code == 409 && e.Verb != "create"
}

// IsRead reports whether the verb is a collection read that matters for relist storms.
func (e *Event) IsRead() bool {
	return e.Verb == "list" || e.Verb == "watch"
}

// IsInitialList reports whether the request loaded a whole collection from scratch: a LIST (what
// an informer of a list-then-watch client starts and relists with), or a WATCH with
// sendInitialEvents=true (WatchList: the same for client-go ≥ 1.35, which no longer LISTs). The
// parameter is read as the API server converts it (strconv.ParseBool). An ordinary watch, which a
// healthy informer renews every few minutes, is not one.
func (e *Event) IsInitialList() bool {
	switch e.Verb {
	case "list":
		return true
	case "watch":
		v, err := strconv.ParseBool(e.SendInitialEvents)
		return err == nil && v
	}
	return false
}
