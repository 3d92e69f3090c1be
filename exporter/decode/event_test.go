package decode

import "testing"

func TestIsInitialList(t *testing.T) {
	// requestURIs as the API server logs an informer's requests (client-go v0.37).
	const watchList = "/api/v1/namespaces/ns/configmaps?allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&timeoutSeconds=412&watch=true"
	const renewedWatch = "/api/v1/namespaces/ns/configmaps?allowWatchBookmarks=true&resourceVersion=1234&timeoutSeconds=412&watch=true"
	cases := []struct {
		name, verb, uri string
		want            bool
	}{
		{"a list is one", "list", "/api/v1/namespaces/ns/configmaps?limit=500&resourceVersion=0", true},
		{"a watch that sends the initial state is one", "watch", watchList, true},
		{"a watch with sendInitialEvents=1 is one (strconv.ParseBool)", "watch", "/api/v1/configmaps?sendInitialEvents=1&watch=true", true},
		{"an ordinary watch, renewed from a resource version, is none", "watch", renewedWatch, false},
		{"a watch with sendInitialEvents=false is none", "watch", "/api/v1/configmaps?sendInitialEvents=false&watch=true", false},
		{"a get is none", "get", "/api/v1/namespaces/ns/configmaps/c?sendInitialEvents=true", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := []byte(`{"items":[{"level":"Metadata","auditID":"a","stage":"ResponseComplete","requestURI":"` + tc.uri + `","verb":"` + tc.verb + `","user":{"username":"u"}}]}`)
			checkAgainstReference(t, body)
			d := NewDecoder(0)
			events, err := d.DecodeList(body)
			if err != nil {
				t.Fatal(err)
			}
			if got := events[0].IsInitialList(); got != tc.want {
				t.Fatalf("IsInitialList() = %v (sendInitialEvents %q), want %v", got, events[0].SendInitialEvents, tc.want)
			}
			if d.fallbacks != 0 {
				t.Fatal("fell back to the general path")
			}
		})
	}
}

// TestDecodeKeepsTheWebhookThatMutated: the API server annotates a write with every mutating
// webhook it called; the event keeps the last one that changed the object.
func TestDecodeKeepsTheWebhookThatMutated(t *testing.T) {
	annotation := func(round, index int, config, webhook string, mutated bool) string {
		return `"mutation.webhook.admission.k8s.io/round_` + string(rune('0'+round)) + `_index_` + string(rune('0'+index)) + `":"{\"configuration\":\"` +
			config + `\",\"webhook\":\"` + webhook + `\",\"mutated\":` + map[bool]string{true: "true", false: "false"}[mutated] + `}"`
	}
	event := func(annotations ...string) []byte {
		a := `"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":"RBAC: allowed by ClusterRoleBinding \"x\" of ClusterRole \"y\""`
		for _, s := range annotations {
			a += "," + s
		}
		return []byte(`{"items":[{"level":"Metadata","auditID":"a","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/ns/configmaps/c?fieldManager=m","verb":"update","user":{"username":"u"},"userAgent":"ctl/v1.2 (linux/amd64)","objectRef":{"resource":"configmaps","namespace":"ns","name":"c","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"annotations":{` + a + `}}]}`)
	}
	cases := []struct {
		name string
		body []byte
		want string
	}{
		{"no webhook", event(), ""},
		{"a webhook that did not change the object", event(annotation(0, 0, "defaults", "d.example.com", false)), ""},
		{"the one that changed it among several", event(
			annotation(0, 0, "defaults", "d.example.com", false),
			annotation(0, 1, "fight", "rewrite.loopwatch.dev", true),
			annotation(1, 0, "defaults", "d.example.com", false)), "fight/rewrite.loopwatch.dev"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkAgainstReference(t, tc.body)
			d := NewDecoder(0)
			events, err := d.DecodeList(tc.body)
			if err != nil {
				t.Fatal(err)
			}
			if got := ParseMutatingWebhook(events[0].MutatingWebhook); got != tc.want || d.fallbacks != 0 {
				t.Fatalf("webhook %q (kept %q, %d fallbacks), want %q", got, events[0].MutatingWebhook, d.fallbacks, tc.want)
			}
			if m := events[0].Manager(); m != "m" {
				t.Fatalf("manager %q, want m", m)
			}
		})
	}
	ev := Event{UserAgent: "backup-operator/v0.3.1 (linux/amd64) kubernetes/abc"}
	if m := ev.Manager(); m != "backup-operator" {
		t.Fatalf("manager from the user agent %q, want backup-operator", m)
	}
}
