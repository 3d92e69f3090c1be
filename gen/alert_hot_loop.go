package gen

import "time"

// HotLoop fires when a controller keeps re-triggering itself with its own writes: every
// reconcile writes (a timestamp annotation, a condition whose lastTransitionTime moves on every
// pass), the write produces a watch event for an object the controller watches, and that event
// queues the next reconcile. Such a loop runs at the speed of a round trip, for ever, and writes
// nothing a user asked for.
//
// Nothing in controller-runtime's metrics says which event caused a reconcile: the priority
// queue counts one add per reconcile whatever woke it, and a no-op status Update (the kubebuilder
// tutorial writes its status on every pass; the API server drops the write when nothing changed)
// counts as a write client-side. So the alert needs two things:
//
//   - a candidate: the controller reconciles more than reconcilesPerSecond and writes about once
//     per reconcile or more (writesPerReconcile). Writes are the controller's own where it is
//     instrumented with loopwatch's instrument package; otherwise its process's POST, PUT,
//     PATCH and DELETE, shared among the process's controllers in proportion to their
//     reconciles (recControllerWrites: client-go has no controller label).
//   - evidence that the writes feed back. Where the audit exporter receives the cluster's
//     writes: one object rewritten over and over by a service account of the controller's
//     namespace (its hot objects: the same object, the same writer, many times a minute). In a
//     cluster without audit data: a write rate above writesPerSecond, which a loop on a single
//     object exceeds at round-trip speed while an event-driven controller reaches it only with a
//     large, busy fleet.
//
// Reconcile duration plays no part: healthy schedulers reconcile in bursts of a few
// milliseconds, and a loop throttled by its client's rate limiter is slow. Bursts of a
// scheduler's child events average out over the 5-minute rates, and its status rewrites touch
// each object a few times per run, not many times a minute.
var HotLoop = &Alert{
	Key: "hotLoop", Name: "HotLoop",
	Severity: SeverityWarning, For: 15 * time.Minute,
	Params: []Param{
		{Key: "reconcilesPerSecond", Default: 1, Check: positive,
			Doc: "Reconcile rate of a controller above which it may be looping."},
		{Key: "writesPerReconcile", Default: 0.9, Check: positive,
			Doc: "Writes per reconcile above which every reconcile writes, as in a loop (the controller's own writes where it is instrumented, its process's POST, PUT, PATCH and DELETE per reconcile otherwise)."},
		{Key: "writesPerSecond", Default: 10, Check: positive,
			Doc: "Write rate of a controller above which its writes alone show a loop; below it, a hot object of the audit exporter written by the controller's namespace is needed."},
	},
	Level: levelController,
	Expr: func(e *exprEnv) string {
		reconciles := recReconciles.Name
		writes := recControllerWrites.Name
		candidate := lines(
			reconciles+" > "+e.P("reconcilesPerSecond"),
			"and on ("+levelController.by()+")",
			writes+" / on ("+levelController.by()+") "+reconciles+" > "+e.P("writesPerReconcile"))
		volume := lines(
			"(",
			candidate,
			")",
			"and on ("+levelController.by()+")",
			writes+" > "+e.P("writesPerSecond"))
		if !e.b.cfg.Groups.Audit {
			return volume
		}
		// Where the audit exporter receives the cluster's writes, the evidence is direct:
		// namespaces whose service accounts rewrite an object over and over. (An actor that is
		// not a service account would keep the exporter's own namespace: it is left out.) The
		// write rate stands in only for clusters without audit data. A Lease is left out: a
		// leader renews its own every few seconds, which makes it a hot object wherever the
		// audit policy records lease writes (managed clusters' fixed policies can), and is no
		// loop.
		auditing := sumBy(levelCluster, rate(sel("loopwatch_audit_batches_total", e.Selector("exporter")), "5m")) + " > 0"
		hot := countBy(levelNamespace, `label_replace(`+
			sel("loopwatch_audit_hot_object_writes_per_second", e.Selector("exporter"), `resource!="leases"`, `actor=~"system:serviceaccount:.+"`)+
			`, "namespace", "$1", "actor", "system:serviceaccount:([^:]+):.+")`)
		return lines(
			volume,
			"unless on ("+levelCluster.by()+")",
			auditing,
			"or",
			"(",
			candidate,
			")",
			"and on ("+levelNamespace.by()+")",
			hot)
	},
	Summary:     "A controller keeps re-triggering itself with its own writes.",
	Description: "The " + whereController + " reconciles {{ $value | printf \"%.2f\" }} times per second and writes on every reconcile, rewriting the same objects over and over: each write wakes it again. A value that changes on every pass (a timestamp annotation, a condition whose lastTransitionTime is set each time) keeps the loop going.",
	NextStep:    "Stop the controller re-triggering itself: do not write what changes on every pass (timestamps, counters, a status rebuilt each time), patch status only when it changed, and filter its own updates with GenerationChangedPredicate.",
	Panel:       PanelRef{"controller", "Reconciles by result"},
	Cases: func(c *caseEnv) []Case {
		rps, wpr, wps := c.P("reconcilesPerSecond"), c.P("writesPerReconcile"), c.P("writesPerSecond")
		l := c.Controller().With("name", "")
		client := c.Target("controller").With("host", "10.96.0.1:443")
		// An uninstrumented controller reconciling at r0 then r1 per second, its process writing
		// w0 then w1 per second with PUT (status) and PATCH.
		run := func(r0, r1, w0, w1 float64) []*Series {
			return []*Series{
				Counter("controller_runtime_reconcile_total", l.With("result", "success"), r0).Rate(incidentAt, r1),
				Counter("controller_runtime_reconcile_total", l.With("result", "requeue_after"), 0),
				Counter("rest_client_requests_total", client.With("method", "PATCH", "code", "200"), w0/2).Rate(incidentAt, w1/2),
				Counter("rest_client_requests_total", client.With("method", "PUT", "code", "200"), w0/2).Rate(incidentAt, w1/2),
				Counter("rest_client_requests_total", client.With("method", "GET", "code", "200"), 2*r0).Rate(incidentAt, 2*r1),
			}
		}
		// The loop: the reconcile rate jumps above every line, with two writes per reconcile
		// (the controller's own status write and the looping one) or more.
		perReconcile := max(2, wpr*above)
		r1 := max(rps, wps/perReconcile, 1) * above
		w1 := perReconcile * r1
		reconciles := stepRate(0.2, r1, 5*time.Minute)
		writes := stepRate(0.1, w1, 5*time.Minute)
		at := max(c.crossing(incidentAt, incidentAt+10*time.Minute, rps, reconciles),
			c.crossing(incidentAt, incidentAt+10*time.Minute, wps, writes),
			c.crossing(incidentAt, incidentAt+10*time.Minute, wpr, func(t time.Duration) float64 { return writes(t) / reconciles(t) }))
		cases := []Case{
			{
				Name:   "fires when an uninstrumented controller writes on every reconcile faster than a busy controller does",
				Series: run(0.2, r1, 0.1, w1),
				Fires:  &Firing{At: at, Labels: c.Instance(l), Value: reconciles},
			},
			{
				// A kubebuilder-style scheduler: its status written on every reconcile (mostly
				// no-op Updates), a Job created per run, bursts averaged by the 5m rates.
				Name:   "stays silent on a scheduler that writes its status on every reconcile without a hot object",
				Series: run(rps*above, rps*above, wps/above, wps/above),
			},
			{
				Name:   "stays silent on a busy controller that writes on one reconcile in four",
				Series: run(4*wps, 4*wps, wps*above, wps*above),
			},
		}
		if c.cfg.Groups.Audit {
			batches := Counter("loopwatch_audit_batches_total", c.Target("exporter"), 10)
			cases = append(cases, Case{
				// Where the exporter receives the audit stream, a busy fleet's writes are not
				// taken for a loop unless an object is rewritten over and over.
				Name:   "stays silent on a busy controller writing on every reconcile while the audit exporter finds no hot object",
				Series: append(run(0.2, r1, 0.1, w1), batches),
			})
			// A slow loop: a timestamp with one-second resolution rewritten by a few objects,
			// under writesPerSecond, caught by the exporter's hot object of the controller's
			// service account. The hot object of another namespace's controller proves nothing.
			slowR := rps * above
			slowW := min(wps/above, slowR*max(wpr, 1)*above)
			hot := func(namespace string) *Series {
				return Gauge("loopwatch_audit_hot_object_writes_per_second", c.Target("exporter").With(
					"group", "backup.loopwatch.dev", "resource", "backups", "subresource", "", "object_namespace", l["namespace"], "object_name", "nightly",
					"actor", "system:serviceaccount:"+namespace+":backup-operator"), 1).From(incidentAt)
			}
			// The controller's leader-election Lease, renewed every 2 s: 0.5 writes a second.
			lease := Gauge("loopwatch_audit_hot_object_writes_per_second", c.Target("exporter").With(
				"group", "coordination.k8s.io", "resource", "leases", "subresource", "", "object_namespace", l["namespace"], "object_name", "backup-operator",
				"actor", "system:serviceaccount:"+l["namespace"]+":backup-operator"), 0.5)
			sr := stepRate(0.2, slowR, 5*time.Minute)
			sw := stepRate(0.1, slowW, 5*time.Minute)
			slowAt := max(c.crossing(incidentAt, incidentAt+10*time.Minute, rps, sr),
				c.crossing(incidentAt, incidentAt+10*time.Minute, wpr, func(t time.Duration) float64 { return sw(t) / sr(t) }))
			cases = append(cases,
				Case{
					Name:   "fires when a controller writing on every reconcile rewrites one object over and over",
					Series: append(run(0.2, slowR, 0.1, slowW), batches, hot(l["namespace"])),
					Fires:  &Firing{At: slowAt, Labels: c.Instance(l), Value: sr},
				},
				Case{
					Name:   "stays silent when the only hot object is the controller's leader-election Lease",
					Series: append(run(0.2, slowR, 0.1, slowW), batches, lease),
				},
				Case{
					Name:   "stays silent when the hot object is another namespace's",
					Series: append(run(0.2, slowR, 0.1, slowW), batches, hot(l["namespace"]+"-other")),
				},
			)
		}
		return cases
	},
}
