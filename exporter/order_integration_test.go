package exporter

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/loopwatch/loopwatch/internal/stack"
)

// TestWritesAreOrderedAsStored checks, on a real API server, which of an audit event's two times
// orders writes as they were stored: a write that waits 2 s in a (slow) mutating admission
// webhook is received before another one to the same ConfigMap and stored after it (its
// resourceVersion is later). Its requestReceivedTimestamp comes first, its stageTimestamp
// (ResponseComplete) second, as the store did: the exporter orders by stageTimestamp, and counts
// the handoff from the fast writer to the slow one, not the reverse.
func TestWritesAreOrderedAsStored(t *testing.T) {
	stack.SkipShort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e, _, pki, addr := startWebhookExporter(t)
	cp := stack.NewTestControlPlane(t, stack.ControlPlaneOptions{AuditWebhook: pki.auditWebhook(t, addr), AuditLog: true})
	admin := kubernetes.NewForConfigOrDie(cp.AdminConfig())
	slowUser := "system:serviceaccount:" + webhookNamespace + ":slow"
	registerWebhook(ctx, t, admin, &modeDefaulter{slow: map[string]time.Duration{slowUser: 2 * time.Second}})
	var clients [2]kubernetes.Interface // slow, fast
	for i, name := range []string{"slow", "fast"} {
		cfg, err := cp.ServiceAccountConfig(ctx, webhookNamespace, name)
		clients[i] = clientFor(t, cfg, err)
		if err := cp.Grant(ctx, stack.ServiceAccountSubject(webhookNamespace, name), rbacv1.PolicyRule{
			APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "patch"},
		}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := admin.CoreV1().ConfigMaps(webhookNamespace).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "ordered", Labels: map[string]string{webhookSelector: "on"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var rv [2]int64
	var wg sync.WaitGroup
	patch := func(i int) {
		defer wg.Done()
		cm, err := clients[i].CoreV1().ConfigMaps(webhookNamespace).Patch(ctx, "ordered", types.MergePatchType,
			[]byte(`{"data":{"writer":"`+strconv.Itoa(i)+`"}}`), metav1.PatchOptions{})
		if err != nil {
			t.Error(err)
			return
		}
		rv[i], _ = strconv.ParseInt(cm.ResourceVersion, 10, 64)
	}
	wg.Add(2)
	go patch(0)
	time.Sleep(500 * time.Millisecond)
	go patch(1)
	wg.Wait()
	if t.Failed() {
		return
	}
	if rv[1] >= rv[0] {
		t.Fatalf("the fast write stored at resourceVersion %d, the slow one at %d: the slow write was not stored last", rv[1], rv[0])
	}
	// The API server's own account of the two writes.
	times := map[string][2]time.Time{}
	f, err := os.Open(cp.AuditLogPath())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 4<<20)
	for sc.Scan() {
		var ev struct {
			Stage, Verb              string
			User                     struct{ Username string }
			ObjectRef                struct{ Name string }
			RequestReceivedTimestamp time.Time
			StageTimestamp           time.Time
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Stage == "ResponseComplete" && ev.Verb == "patch" && ev.ObjectRef.Name == "ordered" {
			times[ev.User.Username] = [2]time.Time{ev.RequestReceivedTimestamp, ev.StageTimestamp}
		}
	}
	fastUser := "system:serviceaccount:" + webhookNamespace + ":fast"
	slow, fast := times[slowUser], times[fastUser]
	t.Logf("slow write: received %s, completed %s (rv %d); fast write: received %s, completed %s (rv %d)",
		slow[0].Format(time.StampMicro), slow[1].Format(time.StampMicro), rv[0], fast[0].Format(time.StampMicro), fast[1].Format(time.StampMicro), rv[1])
	if !slow[0].Before(fast[0]) || !fast[1].Before(slow[1]) {
		t.Fatalf("want the slow write received first and completed last: slow %v, fast %v", slow, fast)
	}
	handoff := func(from, to string) float64 {
		return testutil.ToFloat64(e.metrics.handoffs.WithLabelValues(from, to, "", "configmaps"))
	}
	waitFor(t, 30*time.Second, "the exporter to take the writes", func() bool {
		return handoff(fastUser, slowUser) == 1
	})
	if n := handoff(slowUser, fastUser); n != 0 {
		t.Fatalf("handoffs slow->fast %v: the exporter took the writes in the order they were received", n)
	}
}
