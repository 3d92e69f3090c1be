package benchrules

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
)

// FleetConfig describes the synthetic fleet: Controllers controller managers (one controller
// each, its own job and namespace), each run as Replicas pods, plus one audit exporter at its
// top-K bound and three kube-apiservers.
type FleetConfig struct {
	Controllers int
	Replicas    int
	// ScrapeInterval is the grid of the backfilled samples and Prometheus' scrape interval.
	ScrapeInterval time.Duration
	// Cluster is the value of the cluster target label every series carries.
	Cluster string
	// StandbySeries makes the standby replicas (leader_election_master_status 0) expose the
	// controller-runtime and instrument series too, flat at their initial values. A
	// controller-runtime manager starts its controllers, and so creates those series, only once
	// it leads; a controller built with NeedLeaderElection false, or a deployment without leader
	// election, exposes them on every replica. On is the heavier case, and the one issue 17 was
	// measured with (3 × reconcile_total series per controller).
	StandbySeries bool
	// Start is when the history begins: every counter starts at zero some time before it.
	Start time.Time
	// Shares of controllers in each state; see Scenarios.
	Scenarios Scenarios
	// Seed varies every random choice (rates, noise, scenario assignment).
	Seed uint64
}

// Scenarios are the shares of controllers in a state that makes an alert's expression true, so
// alerts have as many active instances as a big fleet has. Each controller is in at most one.
type Scenarios struct {
	// Backlog: work queue deeper than 100 and adds outpacing completions, items waiting over
	// 10s (LoopwatchQueueBacklog, LoopwatchQueueWaitHigh). Issue 17 saw 295 of 500 pending.
	Backlog float64
	// Errors: 20 % of reconciles fail (LoopwatchReconcileErrors, the burn-rate alerts).
	Errors float64
	// Slow: a quarter of reconciles over 5s (LoopwatchReconcileSlow).
	Slow float64
	// HotLoop: 15 reconciles/s of 2 ms, each patching (LoopwatchHotLoop, LoopwatchPatchRateHigh).
	HotLoop float64
	// NPlusOne: 30 API calls per reconcile (LoopwatchAPICallsPerReconcileHigh).
	NPlusOne float64
	// StuckProcessor: a worker busy for 15 minutes (LoopwatchProcessorStuck).
	StuckProcessor float64
	// LeaderFlapping: the lease moves every 8 minutes (LoopwatchLeaderFlapping).
	LeaderFlapping float64
	// NoWorkqueueMetrics: reconcile metrics without workqueue_* (LoopwatchWorkqueueMetricsMissing).
	NoWorkqueueMetrics float64
	// Instrumented is the share (of all controllers, whatever their state) running package
	// instrument; FinalizerStuck the share of those with an object stuck on its finalizer.
	Instrumented   float64
	FinalizerStuck float64
}

// DefaultScenarios returns the shares the benchmark runs with by default.
func DefaultScenarios() Scenarios {
	return Scenarios{
		Backlog: 0.59, Errors: 0.04, Slow: 0.02, HotLoop: 0.01, NPlusOne: 0.01,
		StuckProcessor: 0.01, LeaderFlapping: 0.01, NoWorkqueueMetrics: 0.005,
		Instrumented: 0.3, FinalizerStuck: 0.05,
	}
}

// DefaultFleetConfig returns a fleet of n controllers × 3 replicas scraped every 15s whose
// history starts at start.
func DefaultFleetConfig(n int, start time.Time) FleetConfig {
	return FleetConfig{
		Controllers: n, Replicas: 3, ScrapeInterval: 15 * time.Second, Cluster: "bench",
		StandbySeries: true, Start: start, Scenarios: DefaultScenarios(), Seed: 17,
	}
}

func (c FleetConfig) validate() error {
	var errs []error
	if c.Controllers < 1 {
		errs = append(errs, errors.New("controllers must be at least 1"))
	}
	if c.Replicas < 1 {
		errs = append(errs, errors.New("replicas must be at least 1"))
	}
	if c.ScrapeInterval < time.Second {
		errs = append(errs, errors.New("scrape interval must be at least 1s"))
	}
	if c.Start.IsZero() {
		errs = append(errs, errors.New("start time is required"))
	}
	s := c.Scenarios
	total := s.Backlog + s.Errors + s.Slow + s.HotLoop + s.NPlusOne + s.StuckProcessor + s.LeaderFlapping + s.NoWorkqueueMetrics
	if total > 1 {
		errs = append(errs, fmt.Errorf("scenario shares add up to %.3f, more than 1", total))
	}
	for _, v := range []float64{s.Backlog, s.Errors, s.Slow, s.HotLoop, s.NPlusOne, s.StuckProcessor, s.LeaderFlapping, s.NoWorkqueueMetrics, s.Instrumented, s.FinalizerStuck} {
		if v < 0 || v > 1 {
			errs = append(errs, fmt.Errorf("scenario share %v is not within [0, 1]", v))
		}
	}
	return errors.Join(errs...)
}

// Fleet is the synthetic fleet: its scrape targets and every series they expose.
type Fleet struct {
	Config  FleetConfig
	Targets []*Target
	// Scenario counts how many controllers are in each scenario (for the report).
	ScenarioCounts map[string]int
}

// Target is one scrape target: a pod's metrics endpoint as a ServiceMonitor would scrape it.
type Target struct {
	// Path is where the synthetic server serves its exposition: /metrics/<index>.
	Path string
	// Job is the job label (the Service's name, as the Prometheus Operator sets it).
	Job string
	// Labels are the target labels Prometheus attaches to every series (job, instance,
	// namespace, pod, ...), sorted.
	Labels labels.Labels
	// Phase is the offset of the target's sample grid within the scrape interval.
	Phase time.Duration
	// Families are the exposed metric families, in exposition order.
	Families []*Family
}

// Family is one exposed metric family and its series.
type Family struct {
	family
	Series []*Series
}

// Series is one exposed series.
type Series struct {
	// Labels are the series' labels as stored: __name__, the target labels and its own.
	Labels labels.Labels
	// line is the exposition text before the value: name{own labels}.
	line string
	v    value
}

// ExposedSeries counts the series the targets expose (what Prometheus scrapes, without up).
func (f *Fleet) ExposedSeries() int {
	n := 0
	for _, t := range f.Targets {
		for _, fam := range t.Families {
			n += len(fam.Series)
		}
	}
	return n
}

// NewFleet builds the fleet described by cfg.
func NewFleet(cfg FleetConfig) (*Fleet, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("fleet config: %w", err)
	}
	f := &Fleet{Config: cfg, ScenarioCounts: map[string]int{}}
	scenarios := assignScenarios(cfg.Scenarios, cfg.Controllers, cfg.Seed)
	for i := range cfg.Controllers {
		c := newController(cfg, i, scenarios[i])
		f.ScenarioCounts[c.scenario]++
		if c.instrumented {
			f.ScenarioCounts["instrumented"]++
		}
		for r := range cfg.Replicas {
			f.Targets = append(f.Targets, c.target(cfg, r, len(f.Targets)))
		}
	}
	f.Targets = append(f.Targets, exporterTarget(cfg, len(f.Targets)))
	for i := range 3 {
		f.Targets = append(f.Targets, apiserverTarget(cfg, i, len(f.Targets)))
	}
	return f, nil
}

// The scenario names, in the order their shares are laid out.
const (
	scenarioHealthy        = "healthy"
	scenarioBacklog        = "backlog"
	scenarioErrors         = "errors"
	scenarioSlow           = "slow"
	scenarioHotLoop        = "hot-loop"
	scenarioNPlusOne       = "n-plus-one"
	scenarioStuckProcessor = "stuck-processor"
	scenarioLeaderFlapping = "leader-flapping"
	scenarioNoWorkqueue    = "no-workqueue-metrics"
)

// kinds are the controllers' names: controller-runtime names a controller after the lower-cased
// kind it reconciles, so many managers run a controller of the same name.
var kinds = []string{
	"backup", "certificate", "issuer", "database", "bucket", "topic", "cluster", "machine",
	"gateway", "route", "tenant", "dnsrecord", "secretstore", "volume", "snapshot", "policy",
	"workflow", "pipeline", "repository", "application", "queue", "cache", "instance", "user", "role",
}

// controller is one controller manager and what its active replica does.
type controller struct {
	index                 int
	kind, project         string
	scenario              string
	instrumented          bool
	finalizerStuck        bool
	rate                  float64 // reconciles per second
	errorShare            float64
	median, sigma         float64 // reconcile latency, log-normal
	queueMedian           float64 // time in queue, log-normal with sigma 1.5
	addFactor             float64 // workqueue adds per completed item
	maxConcurrent         float64
	callsPerReconcile     float64 // GETs per reconcile
	patchesPerReconcile   float64
	leasePeriod           float64 // seconds between lease moves; 0 = replica 0 leads
	seed                  uint64
	podStart              float64
	depthLevel, depthAmpl float64
}

// controllerIdentity is controller manager i's kind, project (its namespace is the project's
// -system) and the seed of its random choices.
func controllerIdentity(cfg FleetConfig, i int) (kind, project string, seed uint64) {
	kind = kinds[i%len(kinds)]
	return kind, fmt.Sprintf("%s-%03d", kind, i), mix(cfg.Seed, uint64(i)+1)
}

// controllerPod is the name of the pod of replica r of controller manager i.
func controllerPod(cfg FleetConfig, i, r int) string {
	_, project, seed := controllerIdentity(cfg, i)
	return fmt.Sprintf("%s-controller-manager-%s-%s", project, token(seed, 10), token(mix(seed, uint64(r)), 5))
}

func newController(cfg FleetConfig, i int, scenario string) *controller {
	kind, project, seed := controllerIdentity(cfg, i)
	c := &controller{
		index:               i,
		kind:                kind,
		project:             project,
		seed:                seed,
		rate:                0.02 * math.Pow(150, unit(seed^1)), // 0.02 … 3 per second, log-uniform
		errorShare:          0.001 + 0.005*unit(seed^2),
		median:              0.01 * math.Pow(30, unit(seed^3)), // 10 ms … 300 ms
		sigma:               1,
		queueMedian:         0.0005,
		addFactor:           1,
		maxConcurrent:       []float64{1, 1, 2, 5, 10}[int(unit(seed^4)*5)],
		callsPerReconcile:   0.2,
		patchesPerReconcile: 0.3,
		podStart:            float64(cfg.Start.Unix()) - 3600 - 86400*unit(seed^5),
		depthAmpl:           3,
	}
	c.instrumented = unit(seed^6) < cfg.Scenarios.Instrumented
	c.scenario = scenario
	switch c.scenario {
	case scenarioBacklog:
		c.depthLevel, c.depthAmpl = 150, 250
		c.addFactor = 1.25
		c.queueMedian = 3 // ~21 % of items wait over 10s
	case scenarioErrors:
		c.errorShare = 0.2
	case scenarioSlow:
		c.median, c.sigma = 3, 0.7 // ~23 % over 5s
	case scenarioHotLoop:
		c.rate, c.median, c.sigma = 15, 0.002, 0.5
		c.patchesPerReconcile = 1
		c.instrumented = true
	case scenarioNPlusOne:
		c.rate = math.Max(c.rate, 0.5)
		c.callsPerReconcile = 30
	case scenarioLeaderFlapping:
		c.leasePeriod = 480
	}
	c.finalizerStuck = c.instrumented && unit(seed^8) < cfg.Scenarios.FinalizerStuck
	return c
}

// assignScenarios gives each controller its scenario: round(share×n) controllers per scenario
// (at least one when the share is not zero, so a small fleet still shows every alert), spread
// over the fleet by a seeded shuffle.
func assignScenarios(s Scenarios, n int, seed uint64) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = scenarioHealthy
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	for i := n - 1; i > 0; i-- {
		j := int(mix(seed, uint64(i)) % uint64(i+1))
		order[i], order[j] = order[j], order[i]
	}
	next := 0
	for _, b := range []struct {
		name  string
		share float64
	}{
		{scenarioBacklog, s.Backlog}, {scenarioErrors, s.Errors}, {scenarioSlow, s.Slow},
		{scenarioHotLoop, s.HotLoop}, {scenarioNPlusOne, s.NPlusOne}, {scenarioStuckProcessor, s.StuckProcessor},
		{scenarioLeaderFlapping, s.LeaderFlapping}, {scenarioNoWorkqueue, s.NoWorkqueueMetrics},
	} {
		if b.share == 0 {
			continue
		}
		count := max(1, int(math.Round(b.share*float64(n))))
		for range count {
			if next == n {
				return out
			}
			out[order[next]] = b.name
			next++
		}
	}
	return out
}

// token derives a pod-name-like lower-case alphanumeric string from a hash.
func token(h uint64, n int) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	var b strings.Builder
	for range n {
		b.WriteByte(alphabet[h%uint64(len(alphabet))])
		h /= uint64(len(alphabet))
	}
	return b.String()
}

// target builds replica r's scrape target. Replica 0 does the work unless the lease moves; the
// others are standbys.
func (c *controller) target(cfg FleetConfig, r, index int) *Target {
	job := c.project + "-controller-manager-metrics-service"
	pod := controllerPod(cfg, c.index, r)
	t := newTarget(cfg, index, job, map[string]string{
		"namespace": c.project + "-system",
		"service":   job,
		"endpoint":  "https",
		"container": "manager",
		"pod":       pod,
		"instance":  fmt.Sprintf("10.%d.%d.%d:8443", 64+index/65025, index/255%255, index%255+1),
	})
	b := builder{t: t}
	active := r == 0
	seed := mix(c.seed, uint64(r)+100)
	if active || cfg.StandbySeries {
		rc := c.curves(active, seed)
		c.reconcileFamilies(&b, rc, active, seed)
		if c.scenario != scenarioNoWorkqueue {
			c.workqueueFamilies(&b, rc, active, seed)
		}
		if c.instrumented {
			c.instrumentFamilies(&b, active, seed)
		}
	}
	c.restClientFamily(&b, active, seed)
	b.add("leader_election_master_status", value{c: leaderCurve(r, cfg.Replicas, c.leasePeriod), scale: 1},
		fmt.Sprintf("%s.%s.example.com", token(c.seed^9, 8), c.kind))
	return t
}

// counter returns the curve of a counter at rate per second on the active replica, and a flat
// zero on a standby.
func (c *controller) counter(active bool, rate float64, seed uint64) *curve {
	if !active || rate == 0 {
		return constant(0)
	}
	return counterCurve(rate, c.podStart, seed)
}

// reconcileResults are controller-runtime's result label values, in the order it pre-creates them.
var reconcileResults = []string{"success", "error", "requeue", "requeue_after"}

// replicaCurves are the counters several families of one replica derive from: each reconcile
// result, and their sum (reconciles done, items completed).
type replicaCurves struct {
	results map[string]*curve
	total   *curve
	retries *curve
}

func (c *controller) curves(active bool, seed uint64) replicaCurves {
	const requeue, requeueAfter = 0.02, 0.1
	shares := map[string]float64{
		"success": 1 - c.errorShare - requeue - requeueAfter, "error": c.errorShare,
		"requeue": requeue, "requeue_after": requeueAfter,
	}
	rc := replicaCurves{results: map[string]*curve{}}
	var all []*curve
	for i, res := range reconcileResults {
		rc.results[res] = c.counter(active, c.rate*shares[res], seed^uint64(11+i))
		all = append(all, rc.results[res])
	}
	rc.total = sumCurve(all...)
	rc.retries = sumCurve(all[1:]...) // every result but success is re-added with a delay
	return rc
}

func (c *controller) reconcileFamilies(b *builder, rc replicaCurves, active bool, seed uint64) {
	for _, res := range reconcileResults {
		b.add("controller_runtime_reconcile_total", counted(rc.results[res], 1), c.kind, res)
	}
	b.add("controller_runtime_reconcile_errors_total", counted(rc.results["error"], 1), c.kind)
	b.add("controller_runtime_terminal_reconcile_errors_total", counted(rc.results["error"], 0.1), c.kind)
	b.add("controller_runtime_reconcile_panics_total", counted(constant(0), 1), c.kind)
	mean := lognormalMean(c.median, c.sigma)
	b.histogram("controller_runtime_reconcile_time_seconds", rc.total, 1,
		c.counter(active, c.rate*mean, seed^15),
		func(le float64) float64 { return lognormalCDF(le, c.median, c.sigma) }, c.kind)
	b.add("controller_runtime_max_concurrent_reconciles", value{c: constant(c.maxConcurrent), scale: 1}, c.kind)
	busy := math.Min(c.maxConcurrent, c.rate*mean*3)
	b.add("controller_runtime_active_workers", c.gauge(active, 0, busy+1, 30, seed^16, true), c.kind)
}

// gauge is level + amplitude×noise on the active replica, 0 on a standby.
func (c *controller) gauge(active bool, level, amplitude, cell float64, seed uint64, integer bool) value {
	if !active {
		return value{c: constant(0), scale: 1}
	}
	return value{c: gaugeCurve(level, amplitude, cell, seed), scale: 1, floor: integer}
}

// workqueueFamilies are controller-runtime's workqueue series: name and controller both the
// controller's name, depth split by priority (0, and -100 for unchanged resync events).
func (c *controller) workqueueFamilies(b *builder, rc replicaCurves, active bool, seed uint64) {
	k := c.kind
	b.add("workqueue_depth", c.gauge(active, c.depthLevel, c.depthAmpl, 60, seed^21, true), k, k, "0")
	b.add("workqueue_depth", c.gauge(active, 0, 2, 60, seed^22, true), k, k, "-100")
	b.add("workqueue_adds_total", counted(rc.total, c.addFactor), k, k)
	b.histogram("workqueue_queue_duration_seconds", rc.total, c.addFactor,
		c.counter(active, c.rate*c.addFactor*lognormalMean(c.queueMedian, 1.5), seed^23),
		func(le float64) float64 { return lognormalCDF(le, c.queueMedian, 1.5) }, k, k)
	mean := lognormalMean(c.median, c.sigma)
	b.histogram("workqueue_work_duration_seconds", rc.total, 1,
		c.counter(active, c.rate*mean, seed^24),
		func(le float64) float64 { return lognormalCDF(le, c.median, c.sigma) }, k, k)
	unfinished, longest := c.gauge(active, 0, mean*2, 30, seed^25, false), c.gauge(active, 0, mean*2, 30, seed^26, false)
	if c.scenario == scenarioBacklog {
		unfinished = c.gauge(active, 5, 30, 30, seed^25, false)
	}
	if c.scenario == scenarioStuckProcessor {
		longest = c.gauge(active, 900, 300, 300, seed^26, false)
	}
	b.add("workqueue_unfinished_work_seconds", unfinished, k, k)
	b.add("workqueue_longest_running_processor_seconds", longest, k, k)
	b.add("workqueue_retries_total", counted(rc.retries, 1), k, k)
}

// instrumentVerbs are package instrument's verbs, each pre-created at zero, with its access and
// the calls per reconcile of a typical controller.
var instrumentVerbs = []struct {
	verb, access string
	perReconcile float64
}{
	{"get", "read", 1}, {"list", "read", 0.05}, {"create", "write", 0.02}, {"update", "write", 0.02},
	{"patch", "write", 0.3}, {"delete", "write", 0.01}, {"deletecollection", "write", 0},
	{"status_update", "write", 0.05}, {"status_patch", "write", 0.2},
}

func (c *controller) instrumentFamilies(b *builder, active bool, seed uint64) {
	for i, v := range instrumentVerbs {
		per := v.perReconcile
		if c.scenario == scenarioHotLoop && v.verb == "patch" {
			per = 1
		}
		if c.scenario == scenarioNPlusOne && v.verb == "get" {
			per = c.callsPerReconcile
		}
		b.add("loopwatch_controller_api_requests_total", counted(c.counter(active, c.rate*per, seed^uint64(40+i)), 1), c.kind, v.verb, v.access)
	}
	age := c.gauge(active, 0, 20, 60, seed^50, false)
	if c.finalizerStuck {
		age = c.gauge(active, 1200, 600, 600, seed^50, false)
	}
	b.add("loopwatch_controller_finalizer_oldest_pending_seconds", age, c.kind, c.kind+".example.com/finalizer")
}

// restClientFamily is client-go's request counter: the reconciler's calls on the active replica,
// lease renewals (PUT) on the leader and lease polls (GET) on the standbys. client-go creates a
// series on a code's first request, so standbys expose only their GETs.
func (c *controller) restClientFamily(b *builder, active bool, seed uint64) {
	const host = "10.96.0.1:443"
	leaseGets := c.counter(true, 0.5, seed^30)
	if !active {
		b.add("rest_client_requests_total", counted(leaseGets, 1), "200", "GET", host)
		return
	}
	r := c.rate
	for i, s := range []struct {
		code, method string
		rate         float64
	}{
		{"200", "GET", r*c.callsPerReconcile + 0.01},
		{"404", "GET", r * 0.01},
		{"200", "PATCH", r * c.patchesPerReconcile},
		{"200", "PUT", r*0.05 + 0.5},
		{"409", "PUT", r * 0.005},
		{"201", "POST", r * 0.02},
		{"200", "DELETE", r * 0.01},
	} {
		b.add("rest_client_requests_total", counted(c.counter(true, s.rate, seed^uint64(31+i)), 1), s.code, s.method, host)
	}
}

// counted is an integer counter: floor(scale × curve).
func counted(c *curve, scale float64) value { return value{c: c, scale: scale, floor: true} }

// newTarget builds a target with the labels a ServiceMonitor scrape gives it, plus cluster.
func newTarget(cfg FleetConfig, index int, job string, extra map[string]string) *Target {
	m := map[string]string{"cluster": cfg.Cluster, "job": job}
	for k, v := range extra {
		m[k] = v
	}
	interval := cfg.ScrapeInterval
	return &Target{
		Path:   fmt.Sprintf("/metrics/%d", index),
		Job:    job,
		Labels: labels.FromMap(m),
		Phase:  time.Duration(unit(mix(cfg.Seed, uint64(index)+7777)) * float64(interval)).Truncate(time.Millisecond),
	}
}

// declarations memoises mustLookup: a fleet asks for the same few families thousands of times.
var declarations = &declarationCache{m: map[string]family{}}

type declarationCache struct {
	mu sync.Mutex
	m  map[string]family
}

func (c *declarationCache) get(name string) family {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.m[name]
	if !ok {
		f = mustLookup(name)
		c.m[name] = f
	}
	return f
}

// builder adds series to a target, checking each against its family's declaration.
type builder struct {
	t   *Target
	fam map[string]*Family
}

func (b *builder) family(name string) *Family {
	if b.fam == nil {
		b.fam = map[string]*Family{}
	}
	if f, ok := b.fam[name]; ok {
		return f
	}
	f := &Family{family: declarations.get(name)}
	b.fam[name] = f
	b.t.Families = append(b.t.Families, f)
	return f
}

// add adds a counter or gauge series of family name with its own label values in declared order.
func (b *builder) add(name string, v value, labelValues ...string) {
	f := b.family(name)
	if f.Type == "histogram" {
		panic(fmt.Sprintf("benchrules: %s is a histogram; use histogram", name))
	}
	b.series(f, name, v, f.Labels, labelValues, noBucket)
}

// histogram adds one histogram: bucket counts floor(count×scale×cdf(le)), +Inf and _count
// floor(count×scale), and _sum from its own counter.
func (b *builder) histogram(name string, count *curve, scale float64, sum *curve, cdf func(le float64) float64, labelValues ...string) {
	f := b.family(name)
	if f.Type != "histogram" {
		panic(fmt.Sprintf("benchrules: %s is a %s, not a histogram", name, f.Type))
	}
	for _, le := range f.Buckets {
		b.series(f, name+"_bucket", counted(count, scale*cdf(le)), f.Labels, labelValues, le)
	}
	b.series(f, name+"_bucket", counted(count, scale), f.Labels, labelValues, math.Inf(1))
	b.series(f, name+"_sum", value{c: sum, scale: 1}, f.Labels, labelValues, noBucket)
	b.series(f, name+"_count", counted(count, scale), f.Labels, labelValues, noBucket)
}

// noBucket marks a series without an le label.
var noBucket = math.NaN()

// series adds one series. le, unless NaN, is a bucket's bound: exposed as client_golang writes
// it ("1", "1e-08"), stored as Prometheus 3 normalises classic-histogram bounds on ingestion
// ("1.0", "1e-08"), so the backfilled series are the very series the scrapes continue.
func (b *builder) series(f *Family, name string, v value, names, values []string, le float64) {
	if len(names) != len(values) {
		panic(fmt.Sprintf("benchrules: %s declares labels %v, got values %v", name, names, values))
	}
	lb := labels.NewBuilder(b.t.Labels)
	lb.Set(model.MetricNameLabel, name)
	var own []string
	for i, n := range names {
		if b.t.Labels.Has(n) {
			panic(fmt.Sprintf("benchrules: %s's label %q clashes with a target label", name, n))
		}
		// client_golang exposes an empty value (group="" for the core API group); Prometheus
		// stores it as no label at all.
		own = append(own, n+"="+quote(values[i]))
		if values[i] != "" {
			lb.Set(n, values[i])
		}
	}
	if !math.IsNaN(le) {
		lb.Set("le", labels.FormatOpenMetricsFloat(le))
		own = append(own, "le="+quote(exposedFloat(le)))
	}
	line := name
	if len(own) > 0 {
		line += "{" + strings.Join(own, ",") + "}"
	}
	f.Series = append(f.Series, &Series{Labels: lb.Labels(), line: line, v: v})
}
