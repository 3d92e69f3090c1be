package faults

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestLeaseFaultBreaksTheElectorsRequests(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer srv.Close()
	get := func(cfg *rest.Config) error {
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Get(srv.URL)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		// modes, then: how long after the start the process is elected (negative: never), and
		// when the request is made.
		modes     Modes
		electedAt time.Duration
		at        time.Duration
		wantFail  bool
	}{
		{name: "lets requests through before the unreachable time", modes: Modes{LeaseUnreachableAfter: 15 * time.Second}, electedAt: -1, at: 14 * time.Second},
		{name: "fails every request from the unreachable time, elected or not", modes: Modes{LeaseUnreachableAfter: 15 * time.Second}, electedAt: -1, at: 15 * time.Second, wantFail: true},
		{name: "lets a standby's requests through however long it runs", modes: Modes{LeaseLostAfter: 5 * time.Second}, electedAt: -1, at: time.Hour},
		{name: "lets the leader renew until it has led for the lost time", modes: Modes{LeaseLostAfter: 5 * time.Second}, electedAt: 10 * time.Second, at: 14 * time.Second},
		{name: "fails the leader's requests once it has led for the lost time", modes: Modes{LeaseLostAfter: 5 * time.Second}, electedAt: 10 * time.Second, at: 15 * time.Second, wantFail: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(t0)
			f := c.modes.NewLeaseFault(clk)
			cfg := f.RESTConfig(&rest.Config{Host: srv.URL})
			if c.electedAt >= 0 {
				clk.SetTime(t0.Add(c.electedAt))
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() { _ = f.Start(ctx); close(done) }()
				for f.elected.Load() == nil {
					time.Sleep(time.Millisecond)
				}
				cancel()
				<-done
			}
			clk.SetTime(t0.Add(c.at))
			if err := get(cfg); (err != nil) != c.wantFail {
				t.Errorf("request error %v, want failure %v", err, c.wantFail)
			}
		})
	}
	if (Modes{}).NewLeaseFault(nil) != nil {
		t.Error("a lease fault with both modes off")
	}
}
