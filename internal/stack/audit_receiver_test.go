package stack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// auditEvent is the part of an audit.k8s.io/v1 Event the tests look at.
type auditEvent struct {
	AuditID   string `json:"auditID"`
	Stage     string `json:"stage"`
	Verb      string `json:"verb"`
	ObjectRef *struct {
		Resource  string `json:"resource"`
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"objectRef"`
	User struct {
		Username string              `json:"username"`
		Groups   []string            `json:"groups"`
		Extra    map[string][]string `json:"extra"`
	} `json:"user"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// auditEventList is the body the webhook backend POSTs.
type auditEventList struct {
	Kind       string       `json:"kind"`
	APIVersion string       `json:"apiVersion"`
	Items      []auditEvent `json:"items"`
}

// auditReceiver is a TLS audit webhook that records every event it is sent.
type auditReceiver struct {
	srv     *httptest.Server
	mu      sync.Mutex
	batches int
	events  []auditEvent
	bad     []string
}

func newAuditReceiver(t *testing.T) *auditReceiver {
	r := &auditReceiver{}
	r.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var list auditEventList
		err := json.NewDecoder(req.Body).Decode(&list)
		r.mu.Lock()
		defer r.mu.Unlock()
		switch {
		case req.Method != http.MethodPost:
			r.bad = append(r.bad, "method "+req.Method)
		case err != nil:
			r.bad = append(r.bad, "decode: "+err.Error())
		case list.Kind != "EventList" || list.APIVersion != "audit.k8s.io/v1":
			r.bad = append(r.bad, fmt.Sprintf("body is %s %s", list.APIVersion, list.Kind))
		default:
			r.batches++
			r.events = append(r.events, list.Items...)
		}
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// waitFor returns the first event matching match, polling until ctx ends.
func (r *auditReceiver) waitFor(ctx context.Context, match func(auditEvent) bool) (auditEvent, error) {
	for {
		r.mu.Lock()
		bad := r.bad
		for _, e := range r.events {
			if match(e) {
				r.mu.Unlock()
				return e, nil
			}
		}
		n := len(r.events)
		r.mu.Unlock()
		if len(bad) > 0 {
			return auditEvent{}, fmt.Errorf("receiver got malformed requests: %v", bad)
		}
		select {
		case <-ctx.Done():
			return auditEvent{}, fmt.Errorf("no matching audit event among %d received: %w", n, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// configMapCreate matches the completed create of ConfigMap namespace/name.
func configMapCreate(namespace, name string) func(auditEvent) bool {
	return func(e auditEvent) bool {
		return e.Verb == "create" && e.Stage == "ResponseComplete" && e.ObjectRef != nil &&
			e.ObjectRef.Resource == "configmaps" && e.ObjectRef.Namespace == namespace && e.ObjectRef.Name == name
	}
}
