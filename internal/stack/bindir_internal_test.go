package stack

import (
	"net"
	"strconv"
	"testing"
)

// TestFreeAddrStaysBelowTheEphemeralRange: every address FreeAddr hands out is bindable, lies
// below the range the kernel takes outgoing connections' ports from, and is handed out once.
func TestFreeAddrStaysBelowTheEphemeralRange(t *testing.T) {
	lo, hi := portsBelowEphemeral()
	if hi-lo < 1000 {
		t.Skipf("the kernel's ephemeral range leaves [%d, %d) below it: FreeAddr falls back to port 0", lo, hi)
	}
	seen := map[string]bool{}
	for range 100 {
		addr, err := FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		if seen[addr] {
			t.Fatalf("%s handed out twice", addr)
		}
		seen[addr] = true
		_, p, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		port, err := strconv.Atoi(p)
		if err != nil {
			t.Fatal(err)
		}
		if port < lo || port >= hi {
			t.Fatalf("%s is outside [%d, %d), below the ephemeral range", addr, lo, hi)
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("%s cannot be bound: %v", addr, err)
		}
		_ = l.Close()
	}
}
