package exporter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/loopwatch/loopwatch/exporter/decode"
	"github.com/loopwatch/loopwatch/exporter/dedupe"
	"github.com/loopwatch/loopwatch/exporter/track"
)

// Replicas. One replica, the leader (it holds a Kubernetes Lease), receives and counts every
// batch; the others, standbys, follow it and are ready to take over. A standby that is sent a
// batch (a Service spreads the API servers' connections over every ready replica) forwards it to
// the leader. The leader streams every step of its pipeline to each standby, and answers the API
// server only once every standby has applied the step, so that:
//
//   - a standby holds the same reorder buffer, deduplication keys and detection state as the
//     leader, and a fight, hot object or race is seen whole by whichever replica leads;
//   - a standby holds the leader's exact increments since Prometheus last scraped it (a scrape
//     marker in the stream says when one is served); when the leader dies (kill -9, node loss)
//     the standby that takes over adds them to its own counters, so no event goes uncounted and,
//     as its deduplicator knows every event the leader counted, a batch the API server retries
//     (the leader died before its answer) is not counted twice.
//
// Each replica's counters are its own series, summed over the replicas by the rules.

// Role is what a replica does.
type Role int32

const (
	// RoleSingle is an exporter without replicas: it receives and counts.
	RoleSingle Role = iota
	// RoleStandby follows a leader (or waits for one) and forwards the batches it is sent.
	RoleStandby
	// RoleLeader holds the lease: it receives, counts and streams to the standbys.
	RoleLeader
	// RoleStopping is a replica stepping down (shutting down, or the lease lost): it counts
	// nothing more and serves no counters, which the replica taking over adopts.
	RoleStopping
)

func (r Role) String() string {
	return [...]string{"single", "standby", "leader", "stopping"}[r]
}

// Defaults of ReplicationConfig.
const (
	// DefaultAckTimeout bounds how long the leader waits for a standby to apply a step before it
	// drops the standby (which then joins again).
	DefaultAckTimeout = 2 * time.Second
	// DefaultMaxStandbyQueueBytes bounds the frames queued for one standby: about 25 batches of
	// 400 Metadata events.
	DefaultMaxStandbyQueueBytes = 8 << 20
	// DefaultMaxStandbys bounds the standbys a leader streams to: two replicas and a third during
	// a rollout, or three and a fourth.
	DefaultMaxStandbys = 3
)

// ReplicationConfig configures a replica.
type ReplicationConfig struct {
	// Identity names the replica in the lease: "<name>_<nonce>@<host:port>", the address where the
	// others reach it (see ReplicaIdentity).
	Identity string
	// Peers is how the replicas recognise each other (LoadPeers).
	Peers *Peers
	// AckTimeout is DefaultAckTimeout when 0.
	AckTimeout time.Duration
	// MaxStandbyQueueBytes is DefaultMaxStandbyQueueBytes when 0.
	MaxStandbyQueueBytes int64
	// MaxStandbys is DefaultMaxStandbys when 0.
	MaxStandbys int
	// MaxBodyBytes bounds a batch in the stream, as the server's MaxBodyBytes bounds a webhook
	// body (DefaultMaxBodyBytes when 0).
	MaxBodyBytes int64
	// TakeoverWindow: a standby that takes over adopts its leader's unscraped increments when its
	// stream ended at most this long before (the lease duration and two retry periods: the
	// leader died then); a stream that ended earlier was cut while the leader lived on, and was
	// scraped since.
	TakeoverWindow time.Duration
}

// ReplicaIdentity builds a replica's lease identity from its name (the pod's), a nonce (so that
// a restarted container is not mistaken for the leader it was) and the address its peers reach
// it at.
func ReplicaIdentity(name, nonce, address string) string {
	return name + "_" + nonce + "@" + address
}

// replicaAddress is the address in an identity.
func replicaAddress(identity string) (string, bool) {
	i := strings.LastIndexByte(identity, '@')
	if i < 0 || i == len(identity)-1 {
		return "", false
	}
	return identity[i+1:], true
}

// errNotLeader is IngestList's error on a replica that does not lead (any more).
var errNotLeader = errors.New("this replica does not lead")

// replication is the replica side of an Exporter. Fields under "guarded by e.mu" are.
type replication struct {
	cfg    ReplicationConfig
	client *http.Client
	role   atomic.Int32

	// guarded by e.mu
	seq      uint64
	standbys []*standbyConn
	fw       frameWriter
	deltas   []delta
	verdicts verdictDedupe
	follower followerState
	// lastLeader is the last leader seen other than this replica.
	lastLeader string

	// following is the standby's stream to its leader.
	followMu     sync.Mutex
	followCancel context.CancelFunc
	followDone   chan struct{}
	synced       atomic.Bool

	metrics *replicaMetrics
}

// followerState is what a standby keeps of its leader's stream.
type followerState struct {
	// leader is the identity whose stream this is.
	leader string
	// ids maps the leader's series to this replica's own, pending holds the leader's increments
	// since its last scrape.
	ids     map[uint32]*shared
	pending map[uint32]uint64
	// ended is when the stream ended (zero while it runs).
	ended time.Time
}

// EnableReplication makes the exporter a replica, standing by until Lead. It must be called
// before the exporter counts anything.
func (e *Exporter) EnableReplication(cfg ReplicationConfig) error {
	if cfg.Identity == "" {
		return errors.New("replication: identity is required")
	}
	if _, ok := replicaAddress(cfg.Identity); !ok {
		return fmt.Errorf("replication: identity %q names no address (name_nonce@host:port)", cfg.Identity)
	}
	if cfg.Peers == nil {
		return errors.New("replication: the peers' certificate is required")
	}
	if cfg.AckTimeout <= 0 {
		cfg.AckTimeout = DefaultAckTimeout
	}
	if cfg.MaxStandbyQueueBytes <= 0 {
		cfg.MaxStandbyQueueBytes = DefaultMaxStandbyQueueBytes
	}
	if cfg.MaxStandbys <= 0 {
		cfg.MaxStandbys = DefaultMaxStandbys
	}
	if cfg.TakeoverWindow <= 0 {
		cfg.TakeoverWindow = time.Minute
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	rm, err := newReplicaMetrics(e.reg)
	if err != nil {
		return fmt.Errorf("register replica metrics: %w", err)
	}
	tr := &http.Transport{TLSClientConfig: cfg.Peers.clientTLS(), ForceAttemptHTTP2: true}
	tr.Protocols = new(http.Protocols)
	tr.Protocols.SetHTTP2(true)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.repl = &replication{cfg: cfg, client: &http.Client{Transport: tr}, metrics: rm}
	e.repl.role.Store(int32(RoleStandby))
	e.metrics.standby = true
	e.tracker.Follow(true)
	return nil
}

// Role is what the exporter does now.
func (e *Exporter) Role() Role {
	if e.repl == nil {
		return RoleSingle
	}
	return Role(e.repl.role.Load())
}

// Identity is this replica's identity ("" without replication).
func (e *Exporter) Identity() string {
	if e.repl == nil {
		return ""
	}
	return e.repl.cfg.Identity
}

// Ready reports whether the replica serves: it leads, or it follows a leader and is in step
// with it. A Deployment's rollout waits for that before it stops the next old replica.
func (e *Exporter) Ready() bool {
	switch e.Role() {
	case RoleSingle, RoleLeader:
		return true
	case RoleStandby:
		return e.repl.synced.Load()
	}
	return false
}

// Leader is the identity of the leader this replica follows or is ("" when none is known).
func (e *Exporter) Leader() string {
	if e.repl == nil {
		return ""
	}
	if e.Role() == RoleLeader {
		return e.repl.cfg.Identity
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.repl.follower.leader
}

// ---- the leader ----

// standbyConn is a standby's stream, on the leader. Its queue holds frames shared with the other
// standbys' queues (a step is copied once, whatever the number of standbys).
type standbyConn struct {
	name    string
	mu      sync.Mutex
	queue   [][]byte
	queued  int64
	wake    chan struct{}
	acked   atomic.Uint64
	ackMu   sync.Mutex
	ackWake chan struct{}
	done    chan struct{}
	once    sync.Once
	reason  string
	joinSeq uint64
	insync  atomic.Bool
}

func newStandbyConn(name string) *standbyConn {
	return &standbyConn{name: name, wake: make(chan struct{}, 1), ackWake: make(chan struct{}), done: make(chan struct{})}
}

// send queues frames; false when the queue would exceed max (the standby is too far behind). A
// frame larger than max goes through an empty queue: the largest batch always passes.
func (c *standbyConn) send(b []byte, max int64) bool {
	c.mu.Lock()
	if c.queued > 0 && c.queued+int64(len(b)) > max {
		c.mu.Unlock()
		return false
	}
	c.queue = append(c.queue, b)
	c.queued += int64(len(b))
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return true
}

func (c *standbyConn) close(reason string) {
	c.once.Do(func() {
		c.reason = reason
		close(c.done)
	})
}

func (c *standbyConn) ack(seq uint64) {
	c.acked.Store(seq)
	c.ackMu.Lock()
	close(c.ackWake)
	c.ackWake = make(chan struct{})
	c.ackMu.Unlock()
}

// waitAck waits until the standby acknowledged seq; false on timeout or a closed stream.
func (c *standbyConn) waitAck(seq uint64, timer <-chan time.Time) bool {
	for c.acked.Load() < seq {
		c.ackMu.Lock()
		wake := c.ackWake
		c.ackMu.Unlock()
		if c.acked.Load() >= seq {
			return true
		}
		select {
		case <-wake:
		case <-c.done:
			return false
		case <-timer:
			return false
		}
	}
	return true
}

// broadcastLocked queues the frame writer's bytes to every standby and returns the standbys that
// must acknowledge (e.mu held).
func (e *Exporter) broadcastLocked() []*standbyConn {
	r := e.repl
	if len(r.fw.buf) == 0 || len(r.standbys) == 0 {
		r.fw.reset()
		return nil
	}
	out := make([]*standbyConn, 0, len(r.standbys))
	frames := bytes.Clone(r.fw.buf)
	for _, c := range r.standbys {
		if !c.send(frames, r.cfg.MaxStandbyQueueBytes) {
			c.close(DropQueueFull)
			continue
		}
		out = append(out, c)
	}
	r.fw.reset()
	return out
}

// stepLocked streams one step of the pipeline (e.mu held): the series created since the last
// step, the step itself (the batch's body and verdicts, nil for the release timer's), and the
// series deleted. It returns the step's sequence number and the standbys that must apply it.
func (e *Exporter) stepLocked(body, verdicts []byte) (uint64, []*standbyConn) {
	r, m := e.repl, e.metrics
	defined, dropped := m.shared.takeDefinitions()
	r.deltas = m.shared.takeDeltas(r.deltas[:0])
	if len(r.standbys) == 0 {
		return 0, nil
	}
	for _, sc := range defined {
		if !sc.deleted {
			r.fw.define(sc)
		}
	}
	r.seq++
	r.fw.step(r.seq, body, verdicts, e.tracker.Released(), r.deltas)
	for _, id := range dropped {
		r.fw.drop(id)
	}
	return r.seq, e.broadcastLocked()
}

// awaitStandbys waits until every standby of standbys applied seq, and drops those that do not
// within the ack timeout.
func (e *Exporter) awaitStandbys(seq uint64, standbys []*standbyConn) {
	if len(standbys) == 0 {
		return
	}
	timer := time.NewTimer(e.repl.cfg.AckTimeout)
	defer timer.Stop()
	for _, c := range standbys {
		if !c.waitAck(seq, timer.C) {
			c.close(DropAckTimeout)
		}
	}
}

// releaseStep takes the writes whose wait is over, as the leader, and streams the step.
func (e *Exporter) releaseStep() {
	e.mu.Lock()
	if e.Role() != RoleLeader {
		e.mu.Unlock()
		return
	}
	before := e.tracker.Released()
	e.tracker.Release()
	var seq uint64
	var standbys []*standbyConn
	if e.tracker.Released() != before || len(e.metrics.shared.dirty) > 0 {
		seq, standbys = e.stepLocked(nil, nil)
	}
	e.mu.Unlock()
	e.awaitStandbys(seq, standbys)
}

// PrometheusScrapeHeader is the header Prometheus (and the agents built on its scrape code) sends
// with every scrape: a leader's scrape marker is a scrape that carries it, so that another reader
// of /metrics (curl, a test) does not make the standbys forget increments Prometheus has not
// seen.
const PrometheusScrapeHeader = "X-Prometheus-Scrape-Timeout-Seconds"

// Gather gathers g for a Prometheus scrape. On a leader with replicas it is a scrape marker: no
// batch is counted while g is gathered, the standbys are told that every increment so far has
// been served, and the families are returned once they acknowledged (a standby that takes over
// then adopts only the increments after them). A replica stepping down serves no counters: the
// one taking over adopts them.
func (e *Exporter) Gather(g prometheus.Gatherer) ([]*dto.MetricFamily, error) {
	switch e.Role() {
	case RoleSingle, RoleStandby:
		return g.Gather()
	case RoleStopping:
		return nil, errNotLeader
	}
	e.mu.Lock()
	if e.Role() != RoleLeader {
		e.mu.Unlock()
		return nil, errNotLeader
	}
	mfs, err := g.Gather()
	e.metrics.shared.scraped()
	r := e.repl
	var standbys []*standbyConn
	var seq uint64
	if len(r.standbys) > 0 {
		r.seq++
		seq = r.seq
		r.fw.seq(frameMarker, seq)
		standbys = e.broadcastLocked()
	}
	e.mu.Unlock()
	e.awaitStandbys(seq, standbys)
	return mfs, err
}

// ServeStandby streams the pipeline to a standby that POSTed /replicate (authenticated as a peer
// by the caller), until the standby, the leader or ctx goes away.
func (e *Exporter) ServeStandby(w http.ResponseWriter, r *http.Request) {
	rp := e.repl
	name := r.Header.Get(ReplicaHeader)
	if e.Role() != RoleLeader {
		http.Error(w, "not the leader", http.StatusServiceUnavailable)
		return
	}
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{})
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.EnableFullDuplex()
	c := newStandbyConn(name)
	e.mu.Lock()
	if e.Role() != RoleLeader || len(rp.standbys) >= rp.cfg.MaxStandbys {
		e.mu.Unlock()
		http.Error(w, "not the leader, or too many standbys", http.StatusServiceUnavailable)
		return
	}
	fw := &rp.fw
	fw.hello(rp.cfg.Identity, int64(e.trackerCfg.ReorderWait), e.trackerCfg.MaxReorderBytes)
	for _, sc := range e.metrics.shared.all() {
		fw.define(sc)
	}
	fw.deltas(frameUnscraped, e.metrics.shared.sinceScrape(nil))
	ws, released := e.tracker.Waiting()
	fw.waiting(ws, released)
	rp.seq++
	c.joinSeq = rp.seq
	fw.seq(frameJoined, rp.seq)
	c.queue = append(c.queue, bytes.Clone(fw.buf))
	fw.reset()
	rp.standbys = append(rp.standbys, c)
	unscraped := len(e.metrics.shared.touched)
	e.mu.Unlock()
	e.log.Info("Standby joined", "standby", name, "unscraped", unscraped, "waiting", len(ws))

	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush()
	select { // the join is queued: write it now, not with the next step
	case c.wake <- struct{}{}:
	default:
	}
	go func() {
		fr := newFrameReader(r.Body, 64)
		for {
			t, p, err := fr.next()
			if err != nil {
				c.close(DropClosed)
				return
			}
			seq := p.uint()
			if t != frameAck || p.done() != nil {
				c.close(DropClosed)
				return
			}
			c.ack(seq)
			if seq >= c.joinSeq && c.insync.CompareAndSwap(false, true) {
				rp.metrics.inStep.Add(1)
			}
		}
	}()
	defer func() {
		e.mu.Lock()
		for i, s := range rp.standbys {
			if s == c {
				rp.standbys = append(rp.standbys[:i], rp.standbys[i+1:]...)
				break
			}
		}
		e.mu.Unlock()
		if c.insync.Load() {
			rp.metrics.inStep.Add(-1)
		}
		rp.metrics.dropped.WithLabelValues(c.reason).Inc()
		e.log.Info("Standby left", "standby", name, "reason", c.reason)
	}()
	var out [][]byte
	for {
		select {
		case <-c.wake:
		case <-c.done:
			return
		case <-r.Context().Done():
			c.close(DropClosed)
			return
		}
		c.mu.Lock()
		clear(out)
		out, c.queue = c.queue, out[:0]
		c.mu.Unlock()
		for _, f := range out {
			if _, err := w.Write(f); err != nil {
				c.close(DropClosed)
				return
			}
			c.mu.Lock()
			c.queued -= int64(len(f))
			c.mu.Unlock()
		}
		if err := rc.Flush(); err != nil {
			c.close(DropClosed)
			return
		}
	}
}

// ---- becoming leader, stepping down ----

// Lead makes this replica the leader (it acquired the lease). It stops following, adopts the
// unscraped increments of the leader it followed when that leader just went away, and counts
// from now on.
func (e *Exporter) Lead() {
	r := e.repl
	e.stopFollowing()
	e.mu.Lock()
	defer e.mu.Unlock()
	f := &r.follower
	adopt := f.leader != "" && f.leader == r.lastLeader && !f.ended.IsZero() && e.now().Sub(f.ended) <= r.cfg.TakeoverWindow
	m := e.metrics
	m.standby = false
	m.shared.keep = true
	var n uint64
	if adopt {
		for id, v := range f.pending {
			if sc := f.ids[id]; sc != nil && !sc.deleted {
				m.shared.add(sc, v)
				n += v
			}
		}
	}
	// The adopted increments are unscraped (a standby joining gets them) but sent to nobody.
	m.shared.takeDeltas(nil)
	r.follower = followerState{}
	e.tracker.Follow(false)
	r.role.Store(int32(RoleLeader))
	r.synced.Store(false)
	outcome := TakeoverAdopted
	if !adopt {
		outcome = TakeoverDiscarded
	}
	r.metrics.takeovers.WithLabelValues(outcome).Inc()
	r.metrics.leader.Set(1)
	e.log.Info("Leading", "identity", r.cfg.Identity, "previous", r.lastLeader, "unscraped", outcome, "increments", n)
}

// StepDown stops counting (shutdown, or the lease lost): the replica answers no batch and serves
// no counters any more, and tells its standbys, one of which takes over and adopts what it
// counted since its last scrape. It waits up to the ack timeout for them to have it all.
func (e *Exporter) StepDown() {
	r := e.repl
	if r == nil {
		return
	}
	e.stopFollowing()
	e.mu.Lock()
	wasLeader := e.Role() == RoleLeader
	r.role.Store(int32(RoleStopping))
	r.metrics.leader.Set(0)
	var standbys []*standbyConn
	var seq uint64
	if wasLeader {
		seq, standbys = e.stepLocked(nil, nil)
		r.fw.frame(frameBye)
		e.broadcastLocked()
	}
	e.mu.Unlock()
	e.awaitStandbys(seq, standbys)
	e.mu.Lock()
	for _, c := range r.standbys {
		c.close(DropLeaderStopped)
	}
	e.mu.Unlock()
}

// ---- the standby ----

// Follow makes the standby follow leader (an identity from the lease); "" or this replica's own
// identity stops following.
func (e *Exporter) Follow(leader string) {
	r := e.repl
	if leader != "" && leader != r.cfg.Identity {
		e.mu.Lock()
		r.lastLeader = leader
		e.mu.Unlock()
	}
	if e.Role() != RoleStandby || leader == r.cfg.Identity {
		return
	}
	e.stopFollowing()
	if leader == "" {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	r.followMu.Lock()
	r.followCancel, r.followDone = cancel, done
	r.followMu.Unlock()
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			err := e.followOnce(ctx, leader)
			r.synced.Store(false)
			if ctx.Err() != nil {
				return
			}
			e.log.Info("Replication stream ended", "leader", leader, "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}()
}

// stopFollowing ends the stream to the leader and waits for it.
func (e *Exporter) stopFollowing() {
	r := e.repl
	r.followMu.Lock()
	cancel, done := r.followCancel, r.followDone
	r.followCancel, r.followDone = nil, nil
	r.followMu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	r.synced.Store(false)
}

// followOnce joins leader's stream and applies it until it ends.
func (e *Exporter) followOnce(ctx context.Context, leader string) (err error) {
	r := e.repl
	addr, _ := replicaAddress(leader)
	pr, pw := io.Pipe()
	defer pw.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+addr+ReplicatePath, pr)
	if err != nil {
		return err
	}
	req.Header.Set(ReplicaHeader, r.cfg.Identity)
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := r.client.Do(req)
	if err != nil {
		return fmt.Errorf("join %s: %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("join %s: %s: %s", addr, resp.Status, strings.TrimSpace(string(b)))
	}
	defer func() {
		e.mu.Lock()
		if r.follower.leader == leader && r.follower.ended.IsZero() {
			r.follower.ended = e.now()
		}
		e.mu.Unlock()
	}()
	var ack frameWriter
	send := func(seq uint64) error {
		ack.reset()
		ack.seq(frameAck, seq)
		_, err := pw.Write(ack.buf)
		return err
	}
	fr := newFrameReader(resp.Body, int(r.cfg.MaxBodyBytes)+frameOverhead(e.limits.MaxEvents))
	first := true
	for {
		t, p, err := fr.next()
		if err != nil {
			return err
		}
		if first != (t == frameHello) {
			return fmt.Errorf("stream from %s: frame %d before or after hello", addr, t)
		}
		first = false
		seq, err := e.applyFrame(leader, t, p)
		if err != nil {
			return fmt.Errorf("stream from %s: %w", addr, err)
		}
		if t == frameBye {
			return nil
		}
		if seq > 0 {
			if err := send(seq); err != nil {
				return err
			}
		}
	}
}

// applyFrame applies one frame of leader's stream; it returns the sequence number to
// acknowledge, 0 for none.
func (e *Exporter) applyFrame(leader string, t frameType, p *payload) (uint64, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.repl
	f := &r.follower
	if e.Role() != RoleStandby {
		return 0, errors.New("not a standby any more")
	}
	switch t {
	case frameHello:
		version, id, wait, maxBytes := p.uint(), p.string(), p.int(), p.int()
		if err := p.done(); err != nil {
			return 0, err
		}
		if version != streamVersion || id != leader {
			return 0, fmt.Errorf("hello from %q (version %d), want %q (version %d)", id, version, leader, streamVersion)
		}
		if time.Duration(wait) != e.trackerCfg.ReorderWait || maxBytes != e.trackerCfg.MaxReorderBytes {
			e.log.Warn("Leader's reorder settings differ: detections may differ after a takeover",
				"leaderWait", time.Duration(wait), "wait", e.trackerCfg.ReorderWait, "leaderMaxBytes", maxBytes, "maxBytes", e.trackerCfg.MaxReorderBytes)
		}
		// A new stream: the increments held for another leader (or an earlier stream of this
		// one) are that leader's business, or already adopted by another replica.
		*f = followerState{leader: leader, ids: map[uint32]*shared{}, pending: map[uint32]uint64{}}
	case frameDefine:
		id, fam, n := p.id(), family(p.uint()), p.uint()
		if fam >= numFamilies || n > 8 {
			return 0, errFrame
		}
		labels := make([]string, n)
		for i := range labels {
			labels[i] = p.string()
		}
		if err := p.done(); err != nil {
			return 0, err
		}
		sc, err := e.metrics.seriesFor(fam, labels)
		if err != nil {
			return 0, err
		}
		f.ids[id] = sc
	case frameDrop:
		id := p.id()
		if err := p.done(); err != nil {
			return 0, err
		}
		delete(f.ids, id)
		delete(f.pending, id)
	case frameUnscraped:
		ds := p.deltaList(nil)
		if err := p.done(); err != nil {
			return 0, err
		}
		for _, d := range ds {
			f.pending[d.id] += d.n
		}
	case frameWaiting:
		ws, released := p.waiting()
		if err := p.done(); err != nil {
			return 0, err
		}
		e.tracker.Restore(ws, released)
	case frameJoined:
		seq := p.uint()
		if err := p.done(); err != nil {
			return 0, err
		}
		r.synced.Store(true)
		e.log.Info("Following", "leader", leader, "unscraped", len(f.pending))
		return seq, nil
	case frameStep:
		seq, body, verdicts, released := p.uint(), p.bytes(), p.bytes(), p.int()
		r.deltas = p.deltaList(r.deltas[:0])
		if err := p.done(); err != nil {
			return 0, err
		}
		if len(body) > 0 {
			d := e.decoders.Get().(*decode.Decoder)
			events, err := d.DecodeList(body)
			if err == nil {
				r.verdicts.follow(e.dedupe, verdicts)
				e.tracker.ObserveBatch(events, &r.verdicts)
			}
			e.decoders.Put(d)
			if err != nil {
				return 0, fmt.Errorf("batch the leader took: %w", err)
			}
		}
		e.tracker.ReleaseThrough(released)
		for _, d := range r.deltas {
			if _, ok := f.ids[d.id]; ok {
				f.pending[d.id] += d.n
			}
		}
		return seq, nil
	case frameMarker:
		seq := p.uint()
		if err := p.done(); err != nil {
			return 0, err
		}
		clear(f.pending)
		return seq, nil
	case frameBye:
		if err := p.done(); err != nil {
			return 0, err
		}
		f.ended = e.now()
	default:
		return 0, fmt.Errorf("unknown frame %d", t)
	}
	return 0, nil
}

// verdictDedupe is the deduplicator of a batch the leader took: on the leader it records which
// events its deduplicator let through; on a standby it records their keys in the standby's own
// deduplicator (for the retries it may get as leader) and lets through exactly what the leader
// did.
type verdictDedupe struct {
	inner   *dedupe.Window
	bits    []byte
	leading bool
	scratch []uint64
}

func (v *verdictDedupe) lead(inner *dedupe.Window, n int) {
	v.inner, v.leading = inner, true
	v.bits = append(v.bits[:0], make([]byte, (n+7)/8)...)
}

func (v *verdictDedupe) follow(inner *dedupe.Window, bits []byte) {
	v.inner, v.leading, v.bits = inner, false, bits
}

func (v *verdictDedupe) Key(ev *decode.Event, subject uint64) uint64 {
	if v.inner == nil {
		return 1
	}
	return v.inner.Key(ev, subject)
}

func (v *verdictDedupe) Drop(keys []uint64) {
	if v.leading {
		if v.inner != nil {
			v.inner.Drop(keys)
		}
		for i, k := range keys {
			if k != 0 {
				v.bits[i/8] |= 1 << (i % 8)
			}
		}
		return
	}
	if v.inner != nil {
		v.scratch = append(v.scratch[:0], keys...)
		v.inner.Drop(v.scratch)
	}
	for i := range keys {
		if i/8 >= len(v.bits) || v.bits[i/8]&(1<<(i%8)) == 0 {
			keys[i] = 0
		}
	}
}

var _ track.Deduplicator = (*verdictDedupe)(nil)
