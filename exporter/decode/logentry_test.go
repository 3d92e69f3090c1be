package decode

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// entry is a LogEntry as a sink writes it (keys sorted, compact), with the given method,
// resource name, status and principal.
func entry(method, resource, status, principal string) string {
	return fmt.Sprintf(`{"insertId":"0b5d3a3e-7d1c-4c4e-9e9e-2b2f4f0f7a11","labels":{"authorization.k8s.io/decision":"allow"},`+
		`"logName":"projects/p/logs/cloudaudit.googleapis.com%%2Factivity","operation":{"first":true,"id":"0b5d3a3e","last":true,"producer":"k8s.io"},`+
		`"protoPayload":{"@type":"type.googleapis.com/google.cloud.audit.AuditLog","authenticationInfo":{"principalEmail":%q},`+
		`"authorizationInfo":[{"granted":true,"permission":%q,"resource":%q}],"methodName":%q,`+
		`"requestMetadata":{"callerIp":"10.0.0.7","callerSuppliedUserAgent":"manager/v1"},"resourceName":%q,"serviceName":"k8s.io","status":%s},`+
		`"receiveTimestamp":"2026-11-23T16:41:03.123456Z","resource":{"labels":{"cluster_name":"c"},"type":"k8s_cluster"},"severity":"NOTICE",`+
		`"timestamp":"2026-11-23T16:41:02.123456Z"}`, principal, method, resource, method, resource, status)
}

func TestLogEntryMapsMethodAndResourceName(t *testing.T) {
	for _, tc := range []struct {
		name, method, resource, status string
		want                           Event
		err                            error
	}{
		{name: "a core object in a namespace", method: "io.k8s.core.v1.configmaps.update", resource: "core/v1/namespaces/ns/configmaps/state", status: `{}`,
			want: Event{Verb: "update", Resource: "configmaps", Namespace: "ns", Name: "state", Code: 200}},
		{name: "a subresource", method: "io.k8s.core.v1.serviceaccounts.token.create", resource: "core/v1/namespaces/ns/serviceaccounts/sa/token", status: `{}`,
			want: Event{Verb: "create", Resource: "serviceaccounts", Subresource: "token", Namespace: "ns", Name: "sa", Code: 200}},
		{name: "a one-label group", method: "io.k8s.apps.v1.deployments.patch", resource: "apps/v1/namespaces/ns/deployments/web", status: `{}`,
			want: Event{Verb: "patch", APIGroup: "apps", Resource: "deployments", Namespace: "ns", Name: "web", Code: 200}},
		{name: "a DNS group, reversed in the method", method: "io.k8s.coordination.v1.leases.update", resource: "coordination.k8s.io/v1/namespaces/kube-system/leases/l", status: `{}`,
			want: Event{Verb: "update", APIGroup: "coordination.k8s.io", Resource: "leases", Namespace: "kube-system", Name: "l", Code: 200}},
		{name: "a custom resource's group", method: "com.coreos.database.etcd.v1beta2.etcdclusters.patch", resource: "etcd.database.coreos.com/v1beta2/namespaces/ns/etcdclusters/e", status: `{}`,
			want: Event{Verb: "patch", APIGroup: "etcd.database.coreos.com", Resource: "etcdclusters", Namespace: "ns", Name: "e", Code: 200}},
		{name: "a cluster-scoped object with a subresource", method: "io.k8s.core.v1.nodes.status.patch", resource: "core/v1/nodes/n1/status", status: `{}`,
			want: Event{Verb: "patch", Resource: "nodes", Subresource: "status", Name: "n1", Code: 200}},
		{name: "a namespace is its own namespace", method: "io.k8s.core.v1.namespaces.finalize.update", resource: "core/v1/namespaces/gone/finalize", status: `{}`,
			want: Event{Verb: "update", Resource: "namespaces", Subresource: "finalize", Namespace: "gone", Name: "gone", Code: 200}},
		{name: "a collection", method: "io.k8s.core.v1.configmaps.deletecollection", resource: "core/v1/namespaces/ns/configmaps", status: `{}`,
			want: Event{Verb: "deletecollection", Resource: "configmaps", Namespace: "ns", Code: 200}},
		{name: "ABORTED is a 409", method: "io.k8s.core.v1.configmaps.update", resource: "core/v1/namespaces/ns/configmaps/state", status: `{"code":10,"message":"the object has been modified"}`,
			want: Event{Verb: "update", Resource: "configmaps", Namespace: "ns", Name: "state", Code: 409}},
		{name: "ALREADY_EXISTS is a 409", method: "io.k8s.core.v1.configmaps.create", resource: "core/v1/namespaces/ns/configmaps/state", status: `{"code":6}`,
			want: Event{Verb: "create", Resource: "configmaps", Namespace: "ns", Name: "state", Code: 409}},
		{name: "NOT_FOUND is a 404", method: "io.k8s.core.v1.configmaps.delete", resource: "core/v1/namespaces/ns/configmaps/state", status: `{"code":5}`,
			want: Event{Verb: "delete", Resource: "configmaps", Namespace: "ns", Name: "state", Code: 404}},
		{name: "refuses a method of another group", method: "io.k8s.apps.v1.configmaps.update", resource: "core/v1/namespaces/ns/configmaps/state", status: `{}`, err: ErrEntryMethod},
		{name: "refuses a method of another version", method: "io.k8s.core.v2.configmaps.update", resource: "core/v1/namespaces/ns/configmaps/state", status: `{}`, err: ErrEntryMethod},
		{name: "refuses a resource name of another resource", method: "io.k8s.core.v1.secrets.update", resource: "core/v1/namespaces/ns/configmaps/state", status: `{}`, err: ErrEntryResource},
		{name: "refuses a subresource the method does not name", method: "io.k8s.core.v1.pods.update", resource: "core/v1/namespaces/ns/pods/p/status", status: `{}`, err: ErrEntryResource},
		{name: "refuses a verb with capitals", method: "io.k8s.core.v1.configmaps.Update", resource: "core/v1/namespaces/ns/configmaps/state", status: `{}`, err: ErrEntryMethod},
		{name: "refuses an empty path segment", method: "io.k8s.core.v1.configmaps.update", resource: "core/v1/namespaces//configmaps/state", status: `{}`, err: ErrEntryResource},
		{name: "refuses a status code rpc does not define", method: "io.k8s.core.v1.configmaps.update", resource: "core/v1/namespaces/ns/configmaps/state", status: `{"code":409}`, err: ErrEntryStatus},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, general := range []bool{false, true} {
				ld := NewLogEntryDecoder(0, Limits{})
				ld.d.generalOnly = general
				var ev Event
				err := ld.Decode([]byte(entry(tc.method, tc.resource, tc.status, "system:serviceaccount:ns:ctl")), &ev)
				if tc.err != nil {
					if !errors.Is(err, tc.err) {
						t.Fatalf("general path %t: error %v, want %v", general, err, tc.err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("general path %t: %v", general, err)
				}
				if !general && ld.d.fallbacks != 0 {
					t.Errorf("a sorted compact entry fell back to the general path")
				}
				want := tc.want
				want.Username, want.UserAgent, want.Stage = "system:serviceaccount:ns:ctl", "manager/v1", StageResponseComplete
				want.AuditIDHash, want.HasAuditID = HashAuditID([]byte("0b5d3a3e-7d1c-4c4e-9e9e-2b2f4f0f7a11")), true
				ts := time.Date(2026, 11, 23, 16, 41, 2, 123456000, time.UTC)
				want.RequestReceived, want.StageTimestamp = ts, ts
				if ev != want {
					t.Errorf("general path %t:\n got %+v\nwant %+v", general, ev, want)
				}
			}
		})
	}
}

func TestLogEntryOfAnotherLogIsNotAudit(t *testing.T) {
	for name, doc := range map[string]string{
		"another service":  `{"insertId":"x","protoPayload":{"@type":"type.googleapis.com/google.cloud.audit.AuditLog","methodName":"v1.compute.instances.insert","resourceName":"projects/p/zones/z/instances/i","serviceName":"compute.googleapis.com"},"resource":{"type":"gce_instance"},"timestamp":"2026-11-23T16:41:02Z"}`,
		"a text entry":     `{"insertId":"x","logName":"projects/p/logs/stdout","resource":{"type":"k8s_container"},"textPayload":"hello","timestamp":"2026-11-23T16:41:02Z"}`,
		"no payload type":  `{"insertId":"x","protoPayload":{"methodName":"io.k8s.core.v1.configmaps.update","resourceName":"core/v1/namespaces/ns/configmaps/c","serviceName":"k8s.io"},"resource":{"type":"k8s_cluster"},"timestamp":"2026-11-23T16:41:02Z"}`,
		"a null payload":   `{"insertId":"x","protoPayload":null,"resource":{"type":"k8s_cluster"},"timestamp":"2026-11-23T16:41:02Z"}`,
		"another resource": `{"insertId":"x","protoPayload":{"@type":"type.googleapis.com/google.cloud.audit.AuditLog","methodName":"io.k8s.core.v1.configmaps.update","resourceName":"core/v1/namespaces/ns/configmaps/c","serviceName":"k8s.io"},"resource":{"type":"gke_cluster"},"timestamp":"2026-11-23T16:41:02Z"}`,
	} {
		t.Run(name, func(t *testing.T) {
			var ev Event
			if err := NewLogEntryDecoder(0, Limits{}).Decode([]byte(doc), &ev); !errors.Is(err, ErrEntryNotAudit) {
				t.Errorf("error %v, want %v", err, ErrEntryNotAudit)
			}
		})
	}
}

func TestLogEntryTimestamps(t *testing.T) {
	for in, want := range map[string]time.Time{
		"2026-11-23T16:41:02Z":                time.Date(2026, 11, 23, 16, 41, 2, 0, time.UTC),
		"2026-11-23T16:41:02.5Z":              time.Date(2026, 11, 23, 16, 41, 2, 500000000, time.UTC),
		"2026-11-23T16:41:02.123Z":            time.Date(2026, 11, 23, 16, 41, 2, 123000000, time.UTC),
		"2026-11-23T16:41:02.123456789Z":      time.Date(2026, 11, 23, 16, 41, 2, 123456789, time.UTC),
		"2026-11-23T17:41:02.123456789+01:00": time.Date(2026, 11, 23, 16, 41, 2, 123456789, time.UTC),
	} {
		got, ok := parseEntryTime([]byte(in))
		if !ok || !got.Equal(want) {
			t.Errorf("parseEntryTime(%q) = %v, %t; want %v", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "2026-11-23", "2026-13-23T16:41:02Z", "2026-11-23T16:41:02.Z"} {
		if _, ok := parseEntryTime([]byte(in)); ok {
			t.Errorf("parseEntryTime(%q) accepted", in)
		}
	}
}

func TestLogEntryDecodeAllocatesNothing(t *testing.T) {
	ld := NewLogEntryDecoder(0, Limits{})
	doc := []byte(entry("io.k8s.core.v1.configmaps.update", "core/v1/namespaces/ns/configmaps/state", `{"code":10}`, "system:serviceaccount:ns:ctl"))
	var ev Event
	if err := ld.Decode(doc, &ev); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _ = ld.Decode(doc, &ev) }); n != 0 {
		t.Errorf("%v allocations per entry, want 0", n)
	}
}

// FuzzLogEntry checks that the fast path reads Cloud Logging entries exactly as the general path
// does (the same event, or both an error) and that nothing panics. Seeds are entries in the form
// sinks write them, and their edges.
func FuzzLogEntry(f *testing.F) {
	for _, st := range []string{`{}`, `{"code":10,"message":"conflict"}`, `{"code":6}`, `null`} {
		f.Add([]byte(entry("io.k8s.core.v1.configmaps.update", "core/v1/namespaces/ns/configmaps/state", st, "system:serviceaccount:ns:ctl")))
	}
	f.Add([]byte(entry("io.k8s.coordination.v1.leases.update", "coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n", `{}`, "system:node:n")))
	f.Add([]byte(entry("io.k8s.core.v1.namespaces.finalize.update", "core/v1/namespaces/gone/finalize", `{}`, "u\u00e9")))
	f.Add([]byte(`{"insertId":"x","protoPayload":null,"resource":{"type":"k8s_cluster"},"timestamp":"2026-11-23T16:41:02Z"}`))
	f.Add([]byte(`{"protoPayload":{"methodName":"a.b","methodName":null,"resourceName":"core/v1/x"},"timestamp":"2026-11-23T16:41:02.1+01:00"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var fast, general Event
		fd, gd := NewLogEntryDecoder(16, Limits{}), NewLogEntryDecoder(16, Limits{})
		gd.d.generalOnly = true
		ferr, gerr := fd.Decode(data, &fast), gd.Decode(data, &general)
		if (ferr == nil) != (gerr == nil) {
			t.Fatalf("fast path error %v, general path error %v", ferr, gerr)
		}
		if ferr == nil && fast != general {
			t.Fatalf("fast path %+v\ngeneral path %+v", fast, general)
		}
		if ee, ok := ferr.(*EntryError); ok {
			if ge, ok := gerr.(*EntryError); !ok || ge != ee {
				t.Fatalf("fast path refused with %v, general path with %v", ferr, gerr)
			}
		}
	})
}

func TestLogEntryKeepsTheMutatingWebhookOfItsLabels(t *testing.T) {
	doc := strings.Replace(entry("io.k8s.core.v1.configmaps.patch", "core/v1/namespaces/ns/configmaps/c", `{}`, "u"),
		`"labels":{"authorization.k8s.io/decision":"allow"}`,
		`"labels":{"authorization.k8s.io/decision":"allow","mutation.webhook.admission.k8s.io/round_0_index_0":"{\"configuration\":\"stamp\",\"webhook\":\"stamp.loopwatch.dev\",\"mutated\":true}"}`, 1)
	var ev Event
	if err := NewLogEntryDecoder(0, Limits{}).Decode([]byte(doc), &ev); err != nil {
		t.Fatal(err)
	}
	if got := ParseMutatingWebhook(ev.MutatingWebhook); got != "stamp/stamp.loopwatch.dev" {
		t.Errorf("mutating webhook %q (%q), want stamp/stamp.loopwatch.dev", got, ev.MutatingWebhook)
	}
}
