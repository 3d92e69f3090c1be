package diagnose

import (
	"bytes"
	"testing"
	"time"

	"github.com/loopwatch/loopwatch/gen"
)

// Audit findings are tied to controllers deployed as most are: by the pod the actor's writes came
// from, else by the pods kube-state-metrics says run as its service account, else by a job named
// like the service account. The report says which join tied each finding.

// joinReport is a report with one audit finding per join, and one no join can tie.
func joinReport(t testing.TB) Report {
	fx := newFixture(t)
	fx.exporter()
	inv := fx.d.inv
	inv.podJobs, inv.actorPods, inv.saPods = map[podKey][]jobKey{}, map[actorKey][]string{}, map[saKey][]string{}

	// A controller on its namespace's default ServiceAccount, whose token is bound to its pod: the
	// name of the service account says nothing about the job.
	payments := fx.controller("payments", "payments-api", "invoice")
	inv.podJobs[podKey{"", "payments", "payments-api-6f7d9-abcde"}] = []jobKey{{"", "payments", "payments-api"}}
	inv.actorPods[actorKey{"", "system:serviceaccount:payments:default"}] = []string{"payments-api-6f7d9-abcde"}
	hot := map[string]string{"group": "billing.example.com", "resource": "invoices", "object_namespace": "payments", "object_name": "inv-1",
		"actor": "system:serviceaccount:payments:default", "namespace": "payments", "job": "payments-api"}
	fx.holds(gen.HotObject, hot, 12*time.Minute, 0, 3.2)
	fx.signal(gen.HotObject, "writes of the actor to the object", hot, 3.2)

	// kubebuilder's scaffold: ServiceAccount controller-manager, job
	// <project>-controller-manager-metrics-service; the audit events carry no pod (a token not
	// bound to a pod), and kube-state-metrics names the pod that runs as the service account.
	guestbook := fx.controller("guestbook-system", "guestbook-controller-manager-metrics-service", "guestbook")
	inv.podJobs[podKey{"", "guestbook-system", "guestbook-controller-manager-7b9c-x2kqp"}] = []jobKey{{"", "guestbook-system", "guestbook-controller-manager-metrics-service"}}
	inv.saPods[saKey{"", "guestbook-system", "controller-manager"}] = []string{"guestbook-controller-manager-7b9c-x2kqp"}
	fight := map[string]string{"group": "webapp.example.com", "resource": "guestbooks", "object_namespace": "default", "object_name": "guestbook-sample",
		"actor_a": "system:serviceaccount:guestbook-system:controller-manager", "actor_b": "alice@example.com", "namespace": "guestbook-system"}
	fx.holds(gen.WriteFight, fight, 8*time.Minute, 0, 6)
	fx.signal(gen.WriteFight, "handoffs between the two actors in the fight window", fight, 6)

	// The reference operator's service account is named like its job: the guess is all there is.
	backup := fx.controller("backup-system", "backup-operator", "backup")
	race := map[string]string{"group": "backup.loopwatch.dev", "resource": "backups", "object_namespace": "backup-system", "object_name": "nightly",
		"actor": "system:serviceaccount:backup-system:backup-operator", "namespace": "backup-system"}
	fx.holds(gen.ReplicaRace, race, 7*time.Minute, 0, 2)
	fx.signal(gen.ReplicaRace, "pods of the actor writing the object", race, 2)

	// A service account whose pod is no scraped target, in a namespace with no controller.
	lone := map[string]string{"group": "", "resource": "configmaps", "object_namespace": "tools", "object_name": "state",
		"actor": "system:serviceaccount:tools:default", "namespace": "tools"}
	inv.actorPods[actorKey{"", "system:serviceaccount:tools:default"}] = []string{"cron-28391-abcde"}
	fx.holds(gen.HotObject, lone, 6*time.Minute, 0, 1.5)

	for _, l := range []map[string]string{payments, guestbook, backup} {
		fx.signal(gen.ReconcileErrors, "share of reconciles returning an error", l, 0)
	}
	return fx.d.report()
}

func TestReportSaysHowAuditFindingsWereJoined(t *testing.T) {
	r := joinReport(t)
	js, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	golden(t, "joins.json", js)
	golden(t, "joins.txt", text.Bytes())

	want := map[string]struct {
		alert string
		join  Join
	}{
		"invoice":   {gen.HotObject.FullName(), JoinPod},
		"guestbook": {gen.WriteFight.FullName(), JoinServiceAccount},
		"backup":    {gen.ReplicaRace.FullName(), JoinName},
	}
	for _, c := range r.Controllers {
		w := want[c.Name]
		if len(c.Causes) == 0 || c.Causes[0].Alert != w.alert {
			t.Errorf("controller %s: causes %v, want %s first", c.Name, c.Causes, w.alert)
			continue
		}
		if got := c.Causes[0]; got.Attribution != string(byActor) || got.Join != string(w.join) || got.JoinDetail == "" {
			t.Errorf("controller %s: %s tied by %s, joined by %q (%s); want actor, joined by %s", c.Name, got.Alert, got.Attribution, got.Join, got.JoinDetail, w.join)
		}
	}
	if len(r.Unattributed) != 1 || r.Unattributed[0].Labels["actor"] != "system:serviceaccount:tools:default" {
		t.Errorf("unattributed %v, want the hot object of tools:default alone", r.Unattributed)
	}
}

// A controller found both by the pod of one instance and by name through another keeps the pod.
func TestAStrongerJoinWinsOverAWeakerOne(t *testing.T) {
	fx := newFixture(t)
	fx.exporter()
	inv := fx.d.inv
	inv.podJobs, inv.actorPods, inv.saPods = map[podKey][]jobKey{}, map[actorKey][]string{}, map[saKey][]string{}
	fx.controller("shop", "shop-operator", "cart")
	inv.podJobs[podKey{"", "shop", "shop-operator-0"}] = []jobKey{{"", "shop", "shop-operator"}}
	inv.actorPods[actorKey{"", "system:serviceaccount:shop:shop-operator"}] = []string{"shop-operator-0"}
	// A fight between the operator (joined by pod) and a second service account of the same
	// namespace named like the job (joined by name): the operator's pod decides.
	fight := map[string]string{"resource": "carts", "object_namespace": "shop", "object_name": "c-1",
		"actor_a": "system:serviceaccount:shop:shop", "actor_b": "system:serviceaccount:shop:shop-operator"}
	fx.holds(gen.WriteFight, fight, 8*time.Minute, 0, 6)
	r := fx.d.report()
	if c := r.Controllers[0].Causes; len(c) != 1 || c[0].Join != string(JoinPod) {
		t.Fatalf("causes %+v, want the fight joined by pod", c)
	}
}
