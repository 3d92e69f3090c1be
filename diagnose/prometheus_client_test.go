package diagnose

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// The client's failures are told apart: nothing listening, something that is not the Prometheus
// API, an answer over the size bound, a refused query. A web server that is not Prometheus is
// what the second case is about, so httptest plays it.
func TestClientErrors(t *testing.T) {
	closed := func(t *testing.T) string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		_ = l.Close()
		return "http://" + addr
	}
	serve := func(t *testing.T, status int, body string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(status)
			_, _ = w.Write([]byte(body))
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	for _, tc := range []struct {
		name     string
		url      func(t *testing.T) string
		maxBytes int64
		want     error
		text     string
	}{
		{
			name: "nothing listening is unreachable",
			url:  closed, want: ErrUnreachable, text: "connection refused",
		},
		{
			name: "an unknown host is unreachable",
			url:  func(*testing.T) string { return "http://prometheus.invalid:9090" }, want: ErrUnreachable,
		},
		{
			name: "a web server that is not Prometheus says so",
			url:  func(t *testing.T) string { return serve(t, http.StatusNotFound, "<html>Not Found</html>") },
			want: ErrNotPrometheus, text: "404",
		},
		{
			name: "an answer over the bound is refused",
			url: func(t *testing.T) string {
				return serve(t, http.StatusOK, `{"status":"success","data":{"resultType":"vector","result":[`+strings.Repeat(`{"metric":{},"value":[1,"1"]},`, 100)+`]}}`)
			},
			maxBytes: 1000, want: ErrResponseTooLarge,
		},
		{
			name: "a refused query carries Prometheus' reason",
			url: func(t *testing.T) string {
				return serve(t, http.StatusBadRequest, `{"status":"error","errorType":"bad_data","error":"parse error: unexpected end of input"}`)
			},
			text: "bad_data: parse error",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			max := tc.maxBytes
			if max == 0 {
				max = 1 << 20
			}
			c, err := newPromClient(tc.url(t), 5*time.Second, max)
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = c.query(context.Background(), "vector(1)", time.Now())
			if err == nil {
				t.Fatal("no error")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("error %v, want %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.text) {
				t.Errorf("error %q, want it to contain %q", err, tc.text)
			}
		})
	}
}

func TestClientRefusesABadURL(t *testing.T) {
	for _, u := range []string{"", "localhost:9090", "ftp://host", "http://"} {
		if _, err := newPromClient(u, time.Second, 1); err == nil {
			t.Errorf("newPromClient(%q): no error", u)
		}
	}
}

// Run reports an unreachable Prometheus before anything else.
func TestRunUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	_, err = Run(context.Background(), Options{Prometheus: "http://" + addr, Timeout: 2 * time.Second})
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), addr) {
		t.Errorf("error %v, want ErrUnreachable naming %s", err, addr)
	}
}
