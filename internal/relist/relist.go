// Package relist is a Kubernetes client that relists on purpose, over and over: it starts an
// informer on one resource, waits until its cache has synced (the initial list), stops it and
// starts the next. A controller whose informers restart in a loop, or that relists after every
// 410 Gone, loads the API server the same way: a relist storm.
//
// The informer is client-go's own (a dynamic informer, as controller-runtime's unstructured
// caches use). With client-go's WatchList feature on, the default from client-go v0.35 and so in
// the version this module pins (see WatchListEnabled), its initial list is a WATCH with
// sendInitialEvents=true, not a LIST; stopping the informer ends that watch, so the API server's
// audit log records one completed initial-list watch per relist.
package relist

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// Options says what to relist and how often.
type Options struct {
	// Resource is the resource whose objects each informer lists, e.g. {Version: "v1",
	// Resource: "configmaps"}.
	Resource schema.GroupVersionResource
	// Namespace restricts the informer to one namespace ("" for all).
	Namespace string
	// Every is the pause between two relists (0: back to back).
	Every time.Duration
	// SyncTimeout bounds one initial list (10s when 0).
	SyncTimeout time.Duration
}

// WatchListEnabled reports whether client-go lists through WatchList (WATCH with
// sendInitialEvents=true) rather than LIST in this binary.
func WatchListEnabled() bool {
	return clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient)
}

// Run relists until ctx is done and returns how many relists completed. The client identity is
// cfg's: a service account's config makes the storm that account's.
func Run(ctx context.Context, cfg *rest.Config, opts Options) (relists int, err error) {
	if opts.Resource.Resource == "" {
		return 0, errors.New("relist: a resource is required")
	}
	if opts.SyncTimeout == 0 {
		opts.SyncTimeout = 10 * time.Second
	}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return 0, fmt.Errorf("relist: build client: %w", err)
	}
	for {
		if err := Once(ctx, client, opts); err != nil {
			if ctx.Err() != nil {
				return relists, nil
			}
			return relists, err
		}
		relists++
		select {
		case <-ctx.Done():
			return relists, nil
		case <-time.After(opts.Every):
		}
	}
}

// Once starts an informer on the resource, waits until it has listed, and stops it.
func Once(ctx context.Context, client dynamic.Interface, opts Options) error {
	informer := dynamicinformer.NewFilteredDynamicInformer(client, opts.Resource, opts.Namespace, 0, cache.Indexers{}, nil).Informer()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		informer.Run(stop)
	}()
	defer func() {
		close(stop)
		<-done
	}()
	syncCtx, cancel := context.WithTimeout(ctx, opts.SyncTimeout)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), informer.HasSynced) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("relist: %s did not sync within %s", opts.Resource.Resource, opts.SyncTimeout)
	}
	return nil
}
