package controller

import (
	"fmt"
	"sort"

	"github.com/loopwatch/loopwatch/operator/store"
)

// DefaultStoreName is the store a Backup uses when its storeRef is not set.
const DefaultStoreName = "default"

// Stores maps the store names a Backup's storeRef can use to stores.
type Stores map[string]store.Store

// Get resolves a storeRef name; empty means DefaultStoreName. An unknown name
// is an error the caller reports, never a silent fallback to the default.
func (s Stores) Get(name string) (store.Store, error) {
	if name == "" {
		name = DefaultStoreName
	}
	st, ok := s[name]
	if !ok {
		return nil, fmt.Errorf("store %q is not configured", name)
	}
	return st, nil
}

// Names returns the configured store names, sorted so sweeps visit the stores
// in a stable order.
func (s Stores) Names() []string {
	names := make([]string, 0, len(s))
	for n := range s {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
