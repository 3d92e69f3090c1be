package relist

import "testing"

// TestWatchListIsOnInThePinnedClientGo: the relist storm this client makes is one of WATCHes
// with sendInitialEvents=true only because client-go's WatchListClient gate defaults to on in the
// version go.mod pins (from v0.35). A client-go upgrade that turns it off fails here first.
func TestWatchListIsOnInThePinnedClientGo(t *testing.T) {
	if !WatchListEnabled() {
		t.Fatal("client-go's WatchListClient feature is off: informers would LIST")
	}
}
