package faults

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/loopwatch/loopwatch/internal/relist"
)

// Relister is the relisting client of RelistEvery: every Every it starts a fresh ConfigMap
// informer, waits for its initial list and stops it, as a client that rebuilds its informers on
// every error does. It is internal/relist's client: client-go's own informer, so its initial
// lists take the form client-go chooses, a WATCH with sendInitialEvents=true while WatchList is
// on (the default), else a LIST (KUBE_FEATURE_WatchListClient=false).
type Relister struct {
	// Client is a dynamic client with the relister's own user agent.
	Client dynamic.Interface
	// Namespace limits the informer; empty means all namespaces.
	Namespace string
	// Every is the period. Required.
	Every time.Duration
}

// NewRelister builds a Relister with its own client from cfg.
func NewRelister(cfg *rest.Config, namespace string, every time.Duration) (*Relister, error) {
	c := rest.CopyConfig(cfg)
	c.UserAgent = RelisterUserAgent
	dc, err := dynamic.NewForConfig(c)
	if err != nil {
		return nil, fmt.Errorf("create relister client: %w", err)
	}
	return &Relister{Client: dc, Namespace: namespace, Every: every}, nil
}

// NeedLeaderElection reports true: the leader's controllers are the ones
// that relist.
func (r *Relister) NeedLeaderElection() bool { return true }

// maxInFlight bounds the relists running at once: a period shorter than one relist takes
// overlaps them, as the informers of many clients do.
const maxInFlight = 8

// Start starts a relist every Every, at most maxInFlight at once, until ctx is done.
func (r *Relister) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("relister")
	t := time.NewTicker(r.Every)
	defer t.Stop()
	slots := make(chan struct{}, maxInFlight)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case <-ctx.Done():
			return nil
		case slots <- struct{}{}:
		}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			if err := r.relist(ctx); err != nil && ctx.Err() == nil {
				logger.Error(err, "Relist failed")
			}
		}()
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// configMaps is the resource the relister lists.
var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// relist runs one informer until it has synced.
func (r *Relister) relist(ctx context.Context) error {
	return relist.Once(ctx, r.Client, relist.Options{Resource: configMaps, Namespace: r.Namespace, SyncTimeout: 30 * time.Second})
}
