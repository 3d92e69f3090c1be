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
