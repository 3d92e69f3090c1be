package exporter

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/loopwatch/loopwatch/catalogue"
	"github.com/loopwatch/loopwatch/catalogue/cataloguetest"
	"github.com/loopwatch/loopwatch/exporter/managed"
	"github.com/loopwatch/loopwatch/exporter/track"
)

func fightWrites() []auditWrite {
	var ws []auditWrite
	for i := range 6 {
		actor := "system:serviceaccount:default:sa-a"
		if i%2 == 1 {
			actor = "system:serviceaccount:default:sa-b"
		}
		ws = append(ws, auditWrite{actor: actor, name: "fighter", at: time.Duration(i) * time.Second})
	}
	return ws
}

func TestExporterExposesFightsWritesAndConflicts(t *testing.T) {
	e, reg := newTestExporter(t)
	writes := append(fightWrites(),
		auditWrite{actor: "system:serviceaccount:default:sa-a", name: "fighter", code: 409, at: 7 * time.Second},
		auditWrite{actor: "admin", verb: "list", resource: "pods", name: "", at: 8 * time.Second},
		auditWrite{actor: "admin", name: "x", stage: "RequestReceived", at: 9 * time.Second},
	)
	if _, err := e.IngestList(eventList(t, writes...)); err != nil {
		t.Fatal(err)
	}
	e.Tracker().Flush() // the writes' reorder wait, over
	want := `
# HELP loopwatch_audit_conflicts_total Writes other than creates answered 409 (optimistic-concurrency conflicts), by actor, API group and resource.
# TYPE loopwatch_audit_conflicts_total counter
loopwatch_audit_conflicts_total{actor="system:serviceaccount:default:sa-a",group="",resource="serviceaccounts"} 1
# HELP loopwatch_audit_events_total Audit events received, by outcome: counted, ignored_stage (not ResponseComplete or Panic), unattributable (no verb or no user: nothing to count them for) or duplicate (the same event seen before: a retried batch).
# TYPE loopwatch_audit_events_total counter
loopwatch_audit_events_total{outcome="counted"} 8
loopwatch_audit_events_total{outcome="duplicate"} 0
loopwatch_audit_events_total{outcome="ignored_stage"} 1
loopwatch_audit_events_total{outcome="unattributable"} 0
# HELP loopwatch_audit_fight_handoffs Handoffs in an ongoing write fight: one object written alternately by two actors at least N times within the fight window, with the field manager each writes under, each actor's namespace, service account and pod (of its latest write), and the mutating admission webhook that changed their writes (if one did). Capped set, expires after the offender TTL.
# TYPE loopwatch_audit_fight_handoffs gauge
loopwatch_audit_fight_handoffs{actor_a="system:serviceaccount:default:sa-a",actor_b="system:serviceaccount:default:sa-b",actor_namespace_a="default",actor_namespace_b="default",actor_pod_a="",actor_pod_b="",actor_service_account_a="sa-a",actor_service_account_b="sa-b",field_manager_a="test",field_manager_b="test",group="",mutating_webhook="",object_name="fighter",object_namespace="default",resource="serviceaccounts",subresource=""} 5
# HELP loopwatch_audit_handoffs_total Successful writes to an object whose previous successful write was by another actor, by previous actor (from_actor), writing actor (to_actor), API group and resource. Reciprocal series (A->B and B->A both rising) are a fight.
# TYPE loopwatch_audit_handoffs_total counter
loopwatch_audit_handoffs_total{from_actor="system:serviceaccount:default:sa-a",group="",resource="serviceaccounts",to_actor="system:serviceaccount:default:sa-b"} 3
loopwatch_audit_handoffs_total{from_actor="system:serviceaccount:default:sa-b",group="",resource="serviceaccounts",to_actor="system:serviceaccount:default:sa-a"} 2
# HELP loopwatch_audit_reads_total Completed list and watch requests by actor, verb, API group and resource (only when the audit policy records reads).
# TYPE loopwatch_audit_reads_total counter
loopwatch_audit_reads_total{actor="admin",group="",resource="pods",verb="list"} 1
# HELP loopwatch_audit_writes_total Completed write requests (create, update, patch, delete, deletecollection) by actor (top-K or "other"), verb, API group, resource and response code class.
# TYPE loopwatch_audit_writes_total counter
loopwatch_audit_writes_total{actor="system:serviceaccount:default:sa-a",code_class="2xx",group="",resource="serviceaccounts",verb="patch"} 3
loopwatch_audit_writes_total{actor="system:serviceaccount:default:sa-a",code_class="4xx",group="",resource="serviceaccounts",verb="patch"} 1
loopwatch_audit_writes_total{actor="system:serviceaccount:default:sa-b",code_class="2xx",group="",resource="serviceaccounts",verb="patch"} 3
`
	names := []string{
		"loopwatch_audit_conflicts_total", "loopwatch_audit_events_total", "loopwatch_audit_fight_handoffs",
		"loopwatch_audit_handoffs_total", "loopwatch_audit_reads_total", "loopwatch_audit_writes_total",
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
}

func TestExporterCountsARetriedBatchOnce(t *testing.T) {
	e, reg := newTestExporter(t)
	body := eventList(t, fightWrites()...)
	for range 3 {
		if _, err := e.IngestList(body); err != nil {
			t.Fatal(err)
		}
	}
	want := `
# HELP loopwatch_audit_events_total Audit events received, by outcome: counted, ignored_stage (not ResponseComplete or Panic), unattributable (no verb or no user: nothing to count them for) or duplicate (the same event seen before: a retried batch).
# TYPE loopwatch_audit_events_total counter
loopwatch_audit_events_total{outcome="counted"} 6
loopwatch_audit_events_total{outcome="duplicate"} 12
loopwatch_audit_events_total{outcome="ignored_stage"} 0
loopwatch_audit_events_total{outcome="unattributable"} 0
# HELP loopwatch_audit_batches_total Event batches decoded and tracked (webhook requests and file ingest chunks).
# TYPE loopwatch_audit_batches_total counter
loopwatch_audit_batches_total 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "loopwatch_audit_events_total", "loopwatch_audit_batches_total"); err != nil {
		t.Fatal(err)
	}
}

func TestExporterRefusesAMalformedBatchWhole(t *testing.T) {
	e, reg := newTestExporter(t)
	body := eventList(t, fightWrites()...)
	if _, err := e.IngestList(body[:len(body)-3]); err == nil {
		t.Fatal("truncated batch accepted")
	}
	if got := testutil.ToFloat64(e.metrics.events.WithLabelValues(EventCounted)); got != 0 {
		t.Fatalf("%v events counted from a malformed batch", got)
	}
	if n, err := testutil.GatherAndCount(reg, "loopwatch_audit_writes_total"); err != nil || n != 0 {
		t.Fatalf("writes series %d, err %v", n, err)
	}
}

func TestIngestLinesSkipsBadLines(t *testing.T) {
	e, reg := newTestExporter(t)
	var b strings.Builder
	for i, w := range fightWrites() {
		w.id = fmt.Sprint(i)
		line := string(eventList(t, w))
		// One event per line, as the log backend writes it.
		line = strings.TrimSuffix(strings.TrimPrefix(line, `{"kind":"EventList","apiVersion":"audit.k8s.io/v1","metadata":{},"items":[`), "]}")
		b.WriteString(line + "\n")
	}
	b.WriteString("{not json\n\n")
	b.WriteString(`{"verb":"` + strings.Repeat("x", 1200) + `"}` + "\n")
	b.WriteString(`{"verb":"patch"}`) // no final newline
	if err := e.IngestLines(strings.NewReader(b.String()), 1000); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP loopwatch_audit_dropped_events_total Lines dropped by file or stdin ingest, by reason (malformed, line_too_long, not_audit_event).
# TYPE loopwatch_audit_dropped_events_total counter
loopwatch_audit_dropped_events_total{reason="line_too_long"} 1
loopwatch_audit_dropped_events_total{reason="malformed"} 1
loopwatch_audit_dropped_events_total{reason="not_audit_event"} 1
# HELP loopwatch_audit_events_total Audit events received, by outcome: counted, ignored_stage (not ResponseComplete or Panic), unattributable (no verb or no user: nothing to count them for) or duplicate (the same event seen before: a retried batch).
# TYPE loopwatch_audit_events_total counter
loopwatch_audit_events_total{outcome="counted"} 6
loopwatch_audit_events_total{outcome="duplicate"} 0
loopwatch_audit_events_total{outcome="ignored_stage"} 0
loopwatch_audit_events_total{outcome="unattributable"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "loopwatch_audit_dropped_events_total", "loopwatch_audit_events_total"); err != nil {
		t.Fatal(err)
	}
	if f := e.Tracker().Fights(); len(f) != 1 {
		t.Fatalf("fights from file ingest: %+v", f)
	}
}

func TestCatalogueMatchesRegisteredMetrics(t *testing.T) {
	e, reg := newTestExporter(t)
	// A replica (leading, here) registers the replicas' metrics too.
	pki := newTestPKI(t)
	peers, err := LoadPeers(pki.certFile, pki.keyFile, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.EnableReplication(ReplicationConfig{Identity: ReplicaIdentity("r", "0", "127.0.0.1:1"), Peers: peers}); err != nil {
		t.Fatal(err)
	}
	e.Lead()
	var ws []auditWrite
	ws = append(ws, fightWrites()...)
	for i := range 25 {
		ws = append(ws, auditWrite{actor: "hot", name: "hot", at: time.Duration(i) * 100 * time.Millisecond})
	}
	ws = append(ws,
		auditWrite{actor: "sa", pod: "p1", name: "race"}, auditWrite{actor: "sa", pod: "p2", name: "race", code: 409, at: time.Second},
		auditWrite{actor: "lister", verb: "list", resource: "pods"})
	if _, err := e.IngestList(eventList(t, ws...)); err != nil {
		t.Fatal(err)
	}
	e.Tracker().Flush()                            // the writes' reorder wait, over
	e.SourceMetrics().Init(managed.SourceFirehose) // a configured source exposes its series
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if err := cataloguetest.Compare(families, catalogue.FromSource(catalogue.SourceExporter)); err != nil {
		t.Error(err)
	}
}

func TestExporterDeletesTheSeriesOfADemotedActor(t *testing.T) {
	reg := prometheus.NewRegistry()
	clock := &fakeClock{now: t0}
	e, err := New(Config{Registerer: reg, Now: clock.Now, Tracker: track.Config{TopK: 1, DecayInterval: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.IngestList(eventList(t, auditWrite{id: "early", actor: "early", name: "x"})); err != nil {
		t.Fatal(err)
	}
	var busy []auditWrite
	for i := range 10 {
		busy = append(busy, auditWrite{id: fmt.Sprint("busy", i), actor: "busy", name: "y", at: time.Duration(i) * time.Second})
	}
	if _, err := e.IngestList(eventList(t, busy...)); err != nil {
		t.Fatal(err)
	}
	clock.mu.Lock()
	clock.now = t0.Add(2 * time.Minute)
	clock.mu.Unlock()
	if _, err := e.IngestList(eventList(t, auditWrite{id: "later", actor: "busy", name: "y", at: time.Minute})); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP loopwatch_audit_writes_total Completed write requests (create, update, patch, delete, deletecollection) by actor (top-K or "other"), verb, API group, resource and response code class.
# TYPE loopwatch_audit_writes_total counter
loopwatch_audit_writes_total{actor="busy",code_class="2xx",group="",resource="serviceaccounts",verb="patch"} 1
loopwatch_audit_writes_total{actor="other",code_class="2xx",group="",resource="serviceaccounts",verb="patch"} 10
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "loopwatch_audit_writes_total"); err != nil {
		t.Fatal(err)
	}
}

// TestExporterCountsInitialListsOfWatchListClients: LISTs and WATCHes with sendInitialEvents=true
// are initial lists (an informer's start or relist); an ordinary watch is a read only.
func TestExporterCountsInitialListsOfWatchListClients(t *testing.T) {
	e, reg := newTestExporter(t)
	const relister, lister = "system:serviceaccount:apps:relister", "system:serviceaccount:apps:lister"
	var ws []auditWrite
	for i := range 3 {
		ws = append(ws, auditWrite{actor: relister, verb: "watch", resource: "configmaps", at: time.Duration(i) * time.Second,
			query: "allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&timeoutSeconds=412&watch=true"})
	}
	ws = append(ws,
		auditWrite{actor: relister, verb: "watch", resource: "configmaps", at: 4 * time.Second, query: "allowWatchBookmarks=true&resourceVersion=1234&watch=true"},
		auditWrite{actor: lister, verb: "list", resource: "configmaps", at: 5 * time.Second, query: "limit=500&resourceVersion=0"},
	)
	if _, err := e.IngestList(eventList(t, ws...)); err != nil {
		t.Fatal(err)
	}
	m := catalogue.AuditInitialListsTotal
	want := fmt.Sprintf(`
# HELP %s %s
# TYPE %s counter
%s{actor=%q,group="",resource="configmaps",verb="list"} 1
%s{actor=%q,group="",resource="configmaps",verb="watch"} 3
`, m.Name, m.Help, m.Name, m.Name, lister, m.Name, relister)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), m.Name); err != nil {
		t.Fatal(err)
	}
}

// TestDocsStateTheMemoryBound: the Bounds table's default column in docs/exporter.md is what
// MemoryBound computes for the default configuration.
func TestDocsStateTheMemoryBound(t *testing.T) {
	readme, err := os.ReadFile("../docs/exporter.md")
	if err != nil {
		t.Fatal(err)
	}
	m, err := MemoryBound(Config{}, ServerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for part, bytes := range map[string]int64{
		"| dedupe |": m.Dedupe, "| tracker |": m.Tracker, "| reorder |": m.Reorder, "| bodies |": m.Bodies, "| decoders |": m.Decoders,
		"| series |": m.Series, "| connections |": m.Connections, "| **total** |": m.Total(),
	} {
		want := fmt.Sprintf("%.1f MiB", float64(bytes)/(1<<20))
		found := false
		for _, line := range strings.Split(string(readme), "\n") {
			if strings.HasPrefix(line, part) {
				found = true
				if !strings.Contains(line, want) {
					t.Errorf("docs/exporter.md's %s row does not state %s: %s", part, want, line)
				}
			}
		}
		if !found {
			t.Errorf("docs/exporter.md has no %s row in its Bounds table", part)
		}
	}
}

// The top-offender gauges tie each actor to its workload: the namespace and name of its service
// account, and the pod behind its bound token on its latest write. An actor that is no service
// account has neither; a token bound to no pod gives no pod.
func TestExporterTiesOffendersToTheirWorkloads(t *testing.T) {
	e, reg := newTestExporter(t)
	var writes []auditWrite
	// A fight between a controller whose token is bound to its pod and a user.
	for i := range 6 {
		w := auditWrite{actor: "system:serviceaccount:shop:cart-operator", pod: "cart-operator-7d4b9-x2kqp", name: "fighter", at: time.Duration(i) * time.Second}
		if i%2 == 1 {
			w = auditWrite{actor: "alice@example.com", name: "fighter", at: time.Duration(i) * time.Second}
		}
		writes = append(writes, w)
	}
	// A controller rewriting one object from a pod that was restarted: the new pod is named.
	for i := range 25 {
		pod := "looper-6c8f-old"
		if i >= 20 {
			pod = "looper-6c8f-new"
		}
		writes = append(writes, auditWrite{actor: "system:serviceaccount:ops:default", pod: pod, name: "hot", at: time.Duration(i) * 100 * time.Millisecond})
	}
	// Two replicas taking turns on one object; the second wrote last.
	for i, pod := range []string{"syncer-0", "syncer-1", "syncer-0", "syncer-1"} {
		writes = append(writes, auditWrite{actor: "system:serviceaccount:apps:syncer", pod: pod, resource: "configmaps", name: "state", at: time.Duration(i) * time.Second})
	}
	if _, err := e.IngestList(eventList(t, writes...)); err != nil {
		t.Fatal(err)
	}
	e.Tracker().Flush() // the writes' reorder wait, over
	want := fmt.Sprintf(`
# HELP loopwatch_audit_fight_handoffs %s
# TYPE loopwatch_audit_fight_handoffs gauge
loopwatch_audit_fight_handoffs{actor_a="alice@example.com",actor_b="system:serviceaccount:shop:cart-operator",actor_namespace_a="",actor_namespace_b="shop",actor_pod_a="",actor_pod_b="cart-operator-7d4b9-x2kqp",actor_service_account_a="",actor_service_account_b="cart-operator",field_manager_a="test",field_manager_b="test",group="",mutating_webhook="",object_name="fighter",object_namespace="default",resource="serviceaccounts",subresource=""} 5
# HELP loopwatch_audit_hot_object_writes_per_second %s
# TYPE loopwatch_audit_hot_object_writes_per_second gauge
loopwatch_audit_hot_object_writes_per_second{actor="system:serviceaccount:ops:default",actor_namespace="ops",actor_pod="looper-6c8f-new",actor_service_account="default",field_manager="test",group="",mutating_webhook="",object_name="hot",object_namespace="default",resource="serviceaccounts",subresource=""} 10.416666666666668
# HELP loopwatch_audit_replica_race_pods %s
# TYPE loopwatch_audit_replica_race_pods gauge
loopwatch_audit_replica_race_pods{actor="system:serviceaccount:apps:syncer",actor_namespace="apps",actor_pod="syncer-1",actor_service_account="syncer",group="",object_name="state",object_namespace="default",resource="configmaps",subresource=""} 2
`, catalogue.AuditFightHandoffs.Help, catalogue.AuditHotObjectWritesPerSecond.Help, catalogue.AuditReplicaRacePods.Help)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"loopwatch_audit_fight_handoffs", "loopwatch_audit_hot_object_writes_per_second", "loopwatch_audit_replica_race_pods"); err != nil {
		t.Fatal(err)
	}
}
