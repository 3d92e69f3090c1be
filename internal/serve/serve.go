// Package serve runs a server on a loopback port for the length of a test.
package serve

import (
	"context"
	"net"
	"testing"
)

// Server is anything served on a listener until its context ends (exporter.Server).
type Server interface {
	Serve(ctx context.Context, l net.Listener) error
}

// Loopback serves s on a free loopback port until the test ends, and returns the address. The
// server's error, if any, fails the test at cleanup.
func Loopback(t testing.TB, s Server) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, l) }()
	t.Cleanup(func() {
		stop()
		if err := <-served; err != nil {
			t.Errorf("serve %s: %v", l.Addr(), err)
		}
	})
	return l.Addr().String()
}
