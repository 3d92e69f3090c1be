package exporter

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/prometheus/client_golang/prometheus"
)

var t0 = time.Date(2026, 11, 21, 4, 0, 0, 0, time.UTC)

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// auditWrite describes one event for eventList.
type auditWrite struct {
	id, actor, pod, verb, resource, ns, name string
	code                                     int32
	at                                       time.Duration
	stage                                    auditv1.Stage
	// query replaces the request URI's query (fieldManager=test).
	query string
}

// auditEvent builds an event in the API server's own types, so the JSON is the real shape.
func (w auditWrite) auditEvent() auditv1.Event {
	if w.verb == "" {
		w.verb = "patch"
	}
	if w.stage == "" {
		w.stage = auditv1.StageResponseComplete
	}
	if w.code == 0 {
		w.code = 200
	}
	if w.resource == "" {
		w.resource = "serviceaccounts"
	}
	if w.ns == "" {
		w.ns = "default"
	}
	user := authnv1.UserInfo{Username: w.actor, Groups: []string{"system:authenticated"}}
	if w.pod != "" {
		user.Extra = map[string]authnv1.ExtraValue{"authentication.kubernetes.io/pod-name": {w.pod}}
	}
	if w.query == "" {
		w.query = "fieldManager=test"
	}
	ts := metav1.NewMicroTime(t0.Add(w.at))
	return auditv1.Event{
		Level: auditv1.LevelMetadata, AuditID: types.UID("id-" + w.id), Stage: w.stage, Verb: w.verb,
		RequestURI: fmt.Sprintf("/api/v1/namespaces/%s/%s/%s?%s", w.ns, w.resource, w.name, w.query),
		User:       user, UserAgent: "test/v1",
		ObjectRef:                &auditv1.ObjectReference{Resource: w.resource, Namespace: w.ns, Name: w.name, APIVersion: "v1"},
		ResponseStatus:           &metav1.Status{Code: w.code},
		RequestReceivedTimestamp: ts, StageTimestamp: ts,
		Annotations: map[string]string{"authorization.k8s.io/decision": "allow"},
	}
}

func eventList(t testing.TB, writes ...auditWrite) []byte {
	t.Helper()
	list := auditv1.EventList{TypeMeta: metav1.TypeMeta{Kind: "EventList", APIVersion: "audit.k8s.io/v1"}}
	for i, w := range writes {
		if w.id == "" {
			w.id = fmt.Sprint(i)
		}
		list.Items = append(list.Items, w.auditEvent())
	}
	b, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newTestExporter(t testing.TB) (*Exporter, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	clock := &fakeClock{now: t0.Add(time.Minute)}
	e, err := New(Config{Registerer: reg, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return e, reg
}
