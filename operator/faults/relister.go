package faults

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Relister is the relisting client of RelistEvery: every Every it builds a
// fresh ConfigMap informer, waits for its initial list and stops it, as a
// client that rebuilds its informers on every error does. It uses client-go's
// generated informers, so its initial lists take the form client-go chooses:
// a WATCH with sendInitialEvents=true while WatchList is on, else a LIST.
type Relister struct {
	// Client is a clientset with the relister's own user agent.
	Client kubernetes.Interface
	// Namespace limits the informer; empty means all namespaces.
	Namespace string
	// Every is the period. Required.
	Every time.Duration
}

// NewRelister builds a Relister with its own clientset from cfg.
func NewRelister(cfg *rest.Config, namespace string, every time.Duration) (*Relister, error) {
	c := rest.CopyConfig(cfg)
	c.UserAgent = RelisterUserAgent
	cs, err := kubernetes.NewForConfig(c)
	if err != nil {
		return nil, fmt.Errorf("create relister client: %w", err)
	}
	return &Relister{Client: cs, Namespace: namespace, Every: every}, nil
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

// relist runs one informer until it has synced.
func (r *Relister) relist(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	f := informers.NewSharedInformerFactoryWithOptions(r.Client, 0, informers.WithNamespace(r.Namespace))
	inf := f.Core().V1().ConfigMaps().Informer()
	f.Start(ctx.Done())
	synced := cache.WaitForCacheSync(ctx.Done(), inf.HasSynced)
	cancel()
	f.Shutdown()
	if !synced {
		return fmt.Errorf("configmap informer did not sync: %w", ctx.Err())
	}
	return nil
}
