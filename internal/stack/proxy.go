package stack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// ProxyMode is how a Proxy picks the backend of a new connection.
type ProxyMode int

const (
	// SpreadConnections hands each new connection to the next backend that accepts it, ready or
	// not: a Service whose pods are all ready, or a load balancer that ignores readiness.
	SpreadConnections ProxyMode = iota
	// FollowReadiness hands connections only to backends whose readiness check answered 200 at
	// the last poll, as a Service's endpoints follow its pods' readiness probes.
	FollowReadiness
)

// ProxyOptions configures StartProxy.
type ProxyOptions struct {
	// Backends are host:port addresses.
	Backends []string
	Mode     ProxyMode
	// ReadinessURL formats a backend's readiness URL from its address (FollowReadiness), e.g.
	// "https://%s/readyz"; ReadinessClient gets it (default http.DefaultClient).
	ReadinessURL    string
	ReadinessClient *http.Client
	// ReadinessPeriod is how often backends are checked; default 1s (a readiness probe's
	// periodSeconds).
	ReadinessPeriod time.Duration
}

// Proxy stands in for a Kubernetes Service in front of replicas in tests: it listens on a free
// loopback port and pins each connection it accepts to one backend for the connection's life, as
// kube-proxy does. TLS passes through untouched. A connection whose backend goes away is closed.
type Proxy struct {
	opts     ProxyOptions
	l        net.Listener
	mu       sync.Mutex
	backends []string
	ready    map[string]bool
	next     int
	conns    map[net.Conn]struct{}
	stop     context.CancelFunc
	wg       sync.WaitGroup
}

// StartProxy starts a proxy; Close stops it and closes every connection.
func StartProxy(opts ProxyOptions) (*Proxy, error) {
	if opts.ReadinessPeriod <= 0 {
		opts.ReadinessPeriod = time.Second
	}
	if opts.ReadinessClient == nil {
		opts.ReadinessClient = http.DefaultClient
	}
	if opts.Mode == FollowReadiness && opts.ReadinessURL == "" {
		return nil, errors.New("proxy: following readiness needs a readiness URL")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy: listen: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{opts: opts, l: l, ready: map[string]bool{}, conns: map[net.Conn]struct{}{}, stop: cancel}
	p.SetBackends(opts.Backends)
	p.wg.Add(1)
	go p.accept()
	if opts.Mode == FollowReadiness {
		p.wg.Add(1)
		go p.poll(ctx)
	}
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.l.Addr().String() }

// SetBackends replaces the backends (a rollout adds and removes pods); connections to the ones
// removed are left as they are, as kube-proxy leaves established connections.
func (p *Proxy) SetBackends(backends []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.backends = append([]string(nil), backends...)
}

// Ready returns the backends the last readiness poll found ready.
func (p *Proxy) Ready() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, b := range p.backends {
		if p.ready[b] {
			out = append(out, b)
		}
	}
	return out
}

func (p *Proxy) poll(ctx context.Context) {
	defer p.wg.Done()
	t := time.NewTicker(p.opts.ReadinessPeriod)
	defer t.Stop()
	for {
		p.mu.Lock()
		backends := append([]string(nil), p.backends...)
		p.mu.Unlock()
		ready := map[string]bool{}
		for _, b := range backends {
			cctx, cancel := context.WithTimeout(ctx, p.opts.ReadinessPeriod)
			ready[b] = HTTPOK(cctx, p.opts.ReadinessClient, fmt.Sprintf(p.opts.ReadinessURL, b)) == nil
			cancel()
		}
		p.mu.Lock()
		p.ready = ready
		p.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// candidates are the backends a new connection may go to, starting with the next in turn.
func (p *Proxy) candidates() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for i := range p.backends {
		b := p.backends[(p.next+i)%len(p.backends)]
		if p.opts.Mode == SpreadConnections || p.ready[b] {
			out = append(out, b)
		}
	}
	p.next++
	return out
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *Proxy) serve(c net.Conn) {
	defer p.wg.Done()
	var b net.Conn
	for _, addr := range p.candidates() {
		var err error
		if b, err = net.DialTimeout("tcp", addr, time.Second); err == nil {
			break
		}
	}
	if b == nil {
		_ = c.Close() // no endpoint: the client sees the connection closed and retries
		return
	}
	p.mu.Lock()
	p.conns[c], p.conns[b] = struct{}{}, struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(b, c)
	go pipe(c, b)
	<-done
	_ = c.Close()
	_ = b.Close()
	<-done
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, b)
	p.mu.Unlock()
}

// Close stops accepting, closes every connection and waits for the proxy's goroutines.
func (p *Proxy) Close() error {
	p.stop()
	err := p.l.Close()
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}
