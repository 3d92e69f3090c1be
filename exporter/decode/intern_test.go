package decode

import (
	"fmt"
	"testing"
)

func TestInterner(t *testing.T) {
	in := NewInterner(8)
	a := in.Intern([]byte("system:serviceaccount:a:b"))
	if a != "system:serviceaccount:a:b" || in.Intern(nil) != "" {
		t.Fatal("interned value differs from its bytes")
	}
	if allocs := testing.AllocsPerRun(10, func() { in.Intern([]byte("system:serviceaccount:a:b")) }); allocs != 0 {
		t.Fatalf("%v allocations for a repeated value", allocs)
	}
	for i := range 1000 {
		in.Intern(fmt.Appendf(nil, "v%d", i))
	}
	if len(in.slots) != 8 {
		t.Fatalf("interner grew to %d slots", len(in.slots))
	}
}
