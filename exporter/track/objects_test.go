package track

import (
	"testing"
	"unsafe"

	"github.com/loopwatch/loopwatch/exporter/decode"
)

func TestObjectStateIsSmall(t *testing.T) {
	if size := unsafe.Sizeof(objectState{}); size > 64 {
		t.Fatalf("objectState is %d bytes, want at most 64", size)
	}
}

func TestObjectTable(t *testing.T) {
	cases := []struct {
		name          string
		run           func(tb *objectTable)
		live          int
		evictions     uint64
		wantFreshLast bool
	}{
		{
			name: "finds an object it holds",
			run: func(tb *objectTable) {
				tb.get(42, 10)
				tb.get(42, 11)
			},
			live: 1,
		},
		{
			name: "evicts the least recently written object of a full set and counts it",
			run: func(tb *objectTable) {
				for i := range ways + 1 {
					tb.get(uint64(i+1), uint32(10+i)) // one set: the set index uses the high bits
				}
			},
			live: ways, evictions: 1,
		},
		{
			name: "reuses expired slots without counting an eviction",
			run: func(tb *objectTable) {
				for i := range ways {
					tb.get(uint64(i+1), 10)
				}
				tb.get(100, 10+100)
			},
			live: ways,
		},
		{
			name: "sweeps expired objects",
			run: func(tb *objectTable) {
				tb.get(1, 10)
				tb.get(2, 10)
				tb.sweep(len(tb.slots), 200)
			},
			live: 0,
		},
		{
			name: "sweeps the whole table once a quarter of the TTL has passed",
			run: func(tb *objectTable) {
				tb.get(1, 10)
				tb.get(2, 10)
				tb.sweepDue(100) // first call: only starts the clock
				tb.sweepDue(115)
			},
			live: 0,
		},
		{
			name: "does not sweep before the clock calls for it",
			run: func(tb *objectTable) {
				tb.get(1, 10)
				tb.sweepDue(100)
				tb.sweepDue(101) // 1 s of a 15 s pass over 8 slots: nothing due yet
			},
			live: 1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tb := newObjectTable(ways, 60, 3)
			tc.run(tb)
			if tb.live != tc.live || tb.evictions != tc.evictions {
				t.Fatalf("live %d evictions %d, want %d and %d", tb.live, tb.evictions, tc.live, tc.evictions)
			}
		})
	}
}

// TestObjectHashTellsObjectsApart: every field of the object counts, and so does where one field
// ends and the next begins (objects that would concatenate alike hash apart).
func TestObjectHashTellsObjectsApart(t *testing.T) {
	tr, err := New(Config{}, nopSink{})
	if err != nil {
		t.Fatal(err)
	}
	base := decode.Event{APIGroup: "apps", Resource: "deployments", Namespace: "ns", Name: "web"}
	objects := map[string]decode.Event{"base": base}
	for name, change := range map[string]func(*decode.Event){
		"name":                         func(e *decode.Event) { e.Name = "web2" },
		"namespace":                    func(e *decode.Event) { e.Namespace = "ns2" },
		"resource":                     func(e *decode.Event) { e.Resource = "statefulsets" },
		"group":                        func(e *decode.Event) { e.APIGroup = "" },
		"subresource":                  func(e *decode.Event) { e.Subresource = "status" },
		"name and namespace shifted":   func(e *decode.Event) { e.Namespace, e.Name = "nsw", "eb" },
		"group and resource shifted":   func(e *decode.Event) { e.APIGroup, e.Resource = "appsd", "eployments" },
		"name moved to subresource":    func(e *decode.Event) { e.Name, e.Subresource = "", "web" },
		"namespace moved to name":      func(e *decode.Event) { e.Namespace, e.Name = "", "nsweb" },
		"long name":                    func(e *decode.Event) { e.Name = "a-name-longer-than-sixteen-bytes-0" },
		"long name, last byte differs": func(e *decode.Event) { e.Name = "a-name-longer-than-sixteen-bytes-1" },
	} {
		ev := base
		change(&ev)
		objects[name] = ev
	}
	seen := map[uint64]string{}
	for name, ev := range objects {
		h := tr.objectHash(&ev)
		if other, ok := seen[h]; ok {
			t.Errorf("objects %q and %q hash alike", name, other)
		}
		seen[h] = name
	}
	again := base
	if tr.objectHash(&again) != tr.objectHash(&base) {
		t.Error("one object hashes differently twice")
	}
}
