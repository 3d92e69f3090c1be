package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	coordinationv1 "k8s.io/api/coordination/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/loopwatch/loopwatch/catalogue"
	"github.com/loopwatch/loopwatch/catalogue/cataloguetest"
	"github.com/loopwatch/loopwatch/gen"
	"github.com/loopwatch/loopwatch/internal/stack"
)

// The identities of the APF test: two named controllers, in and out of kube-system, a third
// named one that the test puts on a tiny priority level of its own to provoke rejections, and a
// bystander that is not named and must stay where it is.
var (
	apfAlpha     = apfIdentity{"team-a", "alpha-controller"}
	apfBeta      = apfIdentity{"kube-system", "beta-controller"}
	apfGamma     = apfIdentity{"team-b", "gamma-controller"}
	apfBystander = apfIdentity{"team-a", "bystander"}
)

// tinyLevel is a priority level with one concurrency share that rejects instead of queuing and
// neither lends nor borrows seats: a flood of requests is rejected at once.
const tinyLevel = "loopwatch-e2e-tiny"

// apfRequests is how many requests each identity sends per phase: few enough to be quick, and
// counted exactly.
const apfRequests = 25

type apfIdentity struct{ namespace, name string }

func (id apfIdentity) serviceAccount() string { return id.namespace + "/" + id.name }

// apfConfig names alpha, beta and gamma (gamma on tinyLevel); every other setting is the default.
func apfConfig() gen.Config {
	cfg := gen.Default()
	cfg.APF.Controllers = []gen.APFController{
		{Name: "alpha", ServiceAccount: apfAlpha.serviceAccount()},
		{Name: "beta", ServiceAccount: apfBeta.serviceAccount()},
		{Name: "gamma", ServiceAccount: apfGamma.serviceAccount(), PriorityLevel: tinyLevel},
	}
	return cfg
}

// series is one APF series: the FlowSchema that classified the requests and its priority level.
type series struct{ flowSchema, priorityLevel string }

func (s series) String() string { return s.flowSchema + "/" + s.priorityLevel }

// TestAPFFlowSchemasOnRealAPIServer applies the FlowSchemas `loopwatch gen` writes to a real
// kube-apiserver and checks, from the API server's own /metrics, that each named controller's
// requests move from the default FlowSchema that classified them to their own, on the same
// priority level, request for request; that lease requests of a kube-system controller stay with
// system-leader-election; and that a ServiceAccount nobody named stays where it was. A real
// Prometheus loaded with the generated rules scrapes the API server meanwhile: the APF recording
// rules record each controller under its own FlowSchema, and the rejection alert catches a flood
// on a tiny priority level.
func TestAPFFlowSchemasOnRealAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kube-apiserver, etcd and Prometheus")
	}
	generated := generate(t, apfConfig())

	cp := stack.NewTestControlPlane(t, stack.ControlPlaneOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	admin := kubernetes.NewForConfigOrDie(cp.AdminConfig())

	clients := map[apfIdentity]kubernetes.Interface{}
	for _, id := range []apfIdentity{apfAlpha, apfBeta, apfGamma, apfBystander} {
		rc, err := cp.ServiceAccountConfig(ctx, id.namespace, id.name)
		if err != nil {
			t.Fatal(err)
		}
		rc.QPS = -1 // no client-side rate limiter, as controller-runtime configures its clients
		clients[id] = kubernetes.NewForConfigOrDie(rc)
		if err := cp.Grant(ctx, stack.ServiceAccountSubject(id.namespace, id.name),
			rbacv1.PolicyRule{Verbs: []string{"list", "get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := cp.Grant(ctx, stack.ServiceAccountSubject(apfBeta.namespace, apfBeta.name),
		rbacv1.PolicyRule{Verbs: []string{"create", "get", "update"}, APIGroups: []string{coordinationv1.GroupName}, Resources: []string{"leases"}}); err != nil {
		t.Fatal(err)
	}

	apiserver, err := cp.ScrapeTarget("apiserver")
	if err != nil {
		t.Fatal(err)
	}
	apiserver.Labels = map[string]string{"cluster": "e2e"}
	rules := filepath.Join(t.TempDir(), "loopwatch.rules.yaml")
	if err := os.WriteFile(rules, generated[gen.RulesFile], 0o600); err != nil {
		t.Fatal(err)
	}
	prom := stack.NewTestPrometheus(t, stack.PrometheusOptions{
		RuleFiles: []string{rules}, OneEvaluationInterval: true,
		Targets: []stack.ScrapeTarget{apiserver},
		// The API server's /metrics is several megabytes: give a scrape more than a second on a
		// busy machine.
		ScrapeInterval: 2 * time.Second,
	})
	if err := prom.WaitForTargetsUp(ctx); err != nil {
		t.Fatal(err)
	}

	// Each identity lists ConfigMaps apfRequests times, in two parts with a successful scrape in
	// between, so that Prometheus sees a FlowSchema's new series grow (a series that appears with
	// its final value has no rate); beta also creates, gets and updates a lease, as leader
	// election does.
	traffic := func(t *testing.T, phase string) {
		t.Helper()
		send := func(n int) {
			for id, c := range clients {
				if id == apfGamma {
					continue
				}
				for range n {
					if _, err := c.CoreV1().ConfigMaps(id.namespace).List(ctx, metav1.ListOptions{}); err != nil {
						t.Fatalf("%s lists ConfigMaps: %v", id.serviceAccount(), err)
					}
				}
			}
		}
		send(apfRequests - 5)
		scrapedSince(ctx, t, prom, time.Now())
		send(5)
		leases := clients[apfBeta].CoordinationV1().Leases(apfBeta.namespace)
		lease, err := leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "beta-" + phase},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("beta-0")}}, metav1.CreateOptions{})
		if err == nil {
			lease, err = leases.Get(ctx, lease.Name, metav1.GetOptions{})
		}
		if err == nil {
			lease.Spec.LeaseDurationSeconds = ptr.To[int32](15)
			_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
		}
		if err != nil {
			t.Fatalf("beta's lease requests: %v", err)
		}
		scrapedSince(ctx, t, prom, time.Now())
	}
	const leaseRequests = 3

	// The default FlowSchemas, before any FlowSchema of loopwatch exists.
	var defaults map[series]float64
	t.Run("without loopwatch's FlowSchemas the default ones classify the controllers", func(t *testing.T) {
		before := dispatched(ctx, t, admin)
		traffic(t, "before")
		defaults = delta(before, dispatched(ctx, t, admin))
		expectDispatched(t, defaults, map[series]float64{
			{"service-accounts", "workload-low"}:              2 * apfRequests, // alpha and the bystander
			{"kube-system-service-accounts", "workload-high"}: apfRequests,     // beta
			{"system-leader-election", "leader-election"}:     leaseRequests,   // beta's lease
			{"loopwatch-alpha", "workload-low"}:               0,
			{"loopwatch-beta", "workload-high"}:               0,
			{"loopwatch-gamma", tinyLevel}:                    0,
		})
	})

	t.Run("the generated FlowSchemas are accepted", func(t *testing.T) {
		createTinyLevel(ctx, t, admin)
		names := applyFlowSchemas(ctx, t, admin, generated[gen.FlowSchemasFile])
		if want := []string{"loopwatch-alpha", "loopwatch-beta", "loopwatch-gamma"}; !slices.Equal(names, want) {
			t.Errorf("applied %v, want %v", names, want)
		}
	})

	t.Run("each named controller's requests move to its own FlowSchema on the same priority level", func(t *testing.T) {
		before := dispatched(ctx, t, admin)
		traffic(t, "after")
		got := delta(before, dispatched(ctx, t, admin))
		expectDispatched(t, got, map[series]float64{
			{"loopwatch-alpha", "workload-low"}:               apfRequests,
			{"loopwatch-beta", "workload-high"}:               apfRequests,
			{"system-leader-election", "leader-election"}:     leaseRequests, // still classified by the default schema
			{"service-accounts", "workload-low"}:              apfRequests,   // the bystander only
			{"kube-system-service-accounts", "workload-high"}: 0,
		})
		// The priority level each controller's requests ran at is the one they ran at before.
		for _, c := range []struct {
			own, before series
		}{
			{series{"loopwatch-alpha", "workload-low"}, series{"service-accounts", "workload-low"}},
			{series{"loopwatch-beta", "workload-high"}, series{"kube-system-service-accounts", "workload-high"}},
		} {
			if got[c.own] == 0 || defaults[c.before] == 0 || c.own.priorityLevel != c.before.priorityLevel {
				t.Errorf("%s: %v requests now, %v at %s before", c.own, got[c.own], defaults[c.before], c.before)
			}
		}
	})

	t.Run("a flood on a tiny priority level is rejected under the controller's own FlowSchema", func(t *testing.T) {
		stop := flood(ctx, clients[apfGamma], apfGamma.namespace)
		defer stop()
		key := func(reason string) string { return "loopwatch-gamma/" + tinyLevel + "/" + reason }
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			return rejected(ctx, t, admin)[key("concurrency-limit")] > 0, nil
		})
		if err != nil {
			t.Fatalf("no rejection of loopwatch-gamma after a minute of flooding: %v (rejections: %v)", err, rejected(ctx, t, admin))
		}
		t.Logf("rejections so far: %v", rejected(ctx, t, admin))
		// Keep flooding while Prometheus takes a few scrapes of the rejections.
		time.Sleep(5 * time.Second)
	})

	t.Run("the API server's APF families are what the catalogue declares", func(t *testing.T) {
		families := scrape(ctx, t, admin)
		var got []*dto.MetricFamily
		var declared []catalogue.Metric
		for _, d := range catalogue.FromSource(catalogue.SourceKubeAPIServer) {
			if !strings.HasPrefix(d.Name, "apiserver_flowcontrol_") {
				continue
			}
			f, ok := families[d.Name]
			if !ok {
				t.Errorf("%s is not exposed", d.Name)
				continue
			}
			got, declared = append(got, f), append(declared, d)
		}
		if err := cataloguetest.Compare(got, declared); err != nil {
			t.Error(err)
		}
	})

	t.Run("the APF recording rules record each controller under its own FlowSchema", func(t *testing.T) {
		for _, q := range []string{
			`cluster_priority_level_flow_schema:apiserver_flowcontrol_dispatched_requests:rate5m{cluster="e2e", flow_schema="loopwatch-alpha", priority_level="workload-low"} > 0`,
			`cluster_priority_level_flow_schema:apiserver_flowcontrol_dispatched_requests:rate5m{cluster="e2e", flow_schema="loopwatch-beta", priority_level="workload-high"} > 0`,
			`cluster_priority_level_flow_schema:apiserver_flowcontrol_dispatched_requests:rate5m{cluster="e2e", flow_schema="system-leader-election", priority_level="leader-election"} > 0`,
			`cluster_priority_level_flow_schema_reason:apiserver_flowcontrol_rejected_requests:rate5m{cluster="e2e", flow_schema="loopwatch-gamma", priority_level="` + tinyLevel + `", reason="concurrency-limit"} > 0`,
			`cluster_priority_level_flow_schema_le:apiserver_flowcontrol_request_wait_duration_seconds_bucket:rate5m{cluster="e2e", flow_schema="loopwatch-alpha", le="+Inf"} > 0`,
		} {
			wait, cancel := context.WithTimeout(ctx, time.Minute)
			v, err := prom.WaitForQuery(wait, q)
			cancel()
			if err != nil {
				t.Errorf("%s: %v", q, err)
				continue
			}
			t.Logf("%s", v)
		}
		recorded, err := prom.Query(ctx, `count by (flow_schema) (cluster_priority_level_flow_schema:apiserver_flowcontrol_dispatched_requests:rate5m{flow_schema="loopwatch-alpha", priority_level!="workload-low"})`)
		if err != nil {
			t.Fatal(err)
		}
		if len(recorded) > 0 {
			t.Errorf("loopwatch-alpha recorded at another priority level: %v", recorded)
		}
	})

	t.Run("the rejection alert catches the flood", func(t *testing.T) {
		wait, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		a, err := prom.WaitForActiveAlert(wait, gen.APFRequestsRejected.FullName(), map[string]string{
			"cluster": "e2e", "flow_schema": "loopwatch-gamma", "priority_level": tinyLevel,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s %s: %s", a.State, a.Labels, a.Annotations["description"])
		for _, other := range []string{"loopwatch-alpha", "loopwatch-beta"} {
			v, err := prom.Query(ctx, fmt.Sprintf(`ALERTS{alertname=%q, flow_schema=%q}`, gen.APFRequestsRejected.FullName(), other))
			if err != nil {
				t.Fatal(err)
			}
			if len(v) > 0 {
				t.Errorf("%s is active for %s, whose requests are never rejected", gen.APFRequestsRejected.FullName(), other)
			}
		}
	})

	t.Run("every rule evaluates without failures", func(t *testing.T) {
		if err := prom.RuleHealth(ctx); err != nil {
			t.Error(err)
		}
	})
}

// generate runs the generator on cfg and returns its files by path.
func generate(t *testing.T, cfg gen.Config) map[string][]byte {
	t.Helper()
	m, err := gen.Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	files, err := m.Files()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		out[f.Path] = f.Content
	}
	return out
}

// scrapedSince waits until Prometheus has scraped the API server successfully in a scrape that
// started after since, so it holds every counter value the API server had then.
func scrapedSince(ctx context.Context, t *testing.T, prom *stack.Prometheus, since time.Time) {
	t.Helper()
	// timestamp() of a selector is its latest sample's scrape time; up of that sample says
	// whether the scrape succeeded.
	q := fmt.Sprintf(`timestamp(up{job="apiserver"}) > %.3f and up{job="apiserver"} == 1`, float64(since.UnixMilli())/1000)
	wait, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := prom.WaitForQuery(wait, q); err != nil {
		t.Fatalf("Prometheus has not scraped the API server since %s: %v", since.Format(time.RFC3339Nano), err)
	}
}

// createTinyLevel creates tinyLevel.
func createTinyLevel(ctx context.Context, t *testing.T, admin kubernetes.Interface) {
	t.Helper()
	pl := &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: tinyLevel},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: ptr.To[int32](1),
				LendablePercent:          ptr.To[int32](0),
				BorrowingLimitPercent:    ptr.To[int32](0),
				LimitResponse:            flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject},
			},
		},
	}
	if _, err := admin.FlowcontrolV1().PriorityLevelConfigurations().Create(ctx, pl, metav1.CreateOptions{FieldValidation: "Strict"}); err != nil {
		t.Fatalf("create priority level %s: %v", tinyLevel, err)
	}
}

// applyFlowSchemas creates every FlowSchema of a generated file through the real API server, with
// strict field validation, and waits until API Priority and Fairness has taken each in (its
// Dangling condition is written once the schema is part of the configuration in use, False when
// its priority level exists). It returns their names in file order.
func applyFlowSchemas(ctx context.Context, t *testing.T, admin kubernetes.Interface, content []byte) []string {
	t.Helper()
	if len(content) == 0 {
		t.Fatalf("gen wrote no %s", gen.FlowSchemasFile)
	}
	var names []string
	for _, doc := range bytes.Split(content, []byte("\n---\n")) {
		var fs flowcontrolv1.FlowSchema
		if err := yaml.UnmarshalStrict(doc, &fs); err != nil {
			t.Fatalf("decode %s: %v", gen.FlowSchemasFile, err)
		}
		if _, err := admin.FlowcontrolV1().FlowSchemas().Create(ctx, &fs, metav1.CreateOptions{FieldValidation: "Strict"}); err != nil {
			t.Fatalf("the API server refuses FlowSchema %s: %v", fs.Name, err)
		}
		names = append(names, fs.Name)
	}
	for _, name := range names {
		// Dangling may be True for a moment when the FlowSchema is digested before its new
		// priority level: wait for False.
		var last string
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			fs, err := admin.FlowcontrolV1().FlowSchemas().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range fs.Status.Conditions {
				if c.Type == flowcontrolv1.FlowSchemaConditionDangling {
					last = fmt.Sprintf("Dangling=%s: %s", c.Status, c.Message)
					return c.Status == flowcontrolv1.ConditionFalse, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("FlowSchema %s is not in use (%s): %v", name, last, err)
		}
	}
	return names
}

// flood lists ConfigMaps from 48 goroutines without retries until stopped.
func flood(ctx context.Context, c kubernetes.Interface, namespace string) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range 48 {
		wg.Go(func() {
			for ctx.Err() == nil {
				// 429s are the point: no retries.
				_ = c.CoreV1().RESTClient().Get().Namespace(namespace).Resource("configmaps").MaxRetries(0).Do(ctx).Error()
			}
		})
	}
	return func() { cancel(); wg.Wait() }
}

// scrape reads the API server's /metrics as the admin, bounded in size.
func scrape(ctx context.Context, t *testing.T, admin kubernetes.Interface) map[string]*dto.MetricFamily {
	t.Helper()
	body, err := admin.CoreV1().RESTClient().Get().AbsPath("/metrics").
		SetHeader("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain))).Stream(ctx)
	if err != nil {
		t.Fatalf("read the API server's /metrics: %v", err)
	}
	defer func() { _ = body.Close() }()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(io.LimitReader(body, 64<<20))
	if err != nil {
		t.Fatalf("parse the API server's /metrics: %v", err)
	}
	return families
}

// dispatched returns apiserver_flowcontrol_dispatched_requests_total by FlowSchema and priority
// level.
func dispatched(ctx context.Context, t *testing.T, admin kubernetes.Interface) map[series]float64 {
	t.Helper()
	out := map[series]float64{}
	for _, m := range scrape(ctx, t, admin)[catalogue.APIServerFlowcontrolDispatchedRequestsTotal.Name].GetMetric() {
		l := labelsOf(m)
		out[series{l[catalogue.LabelFlowSchema], l[catalogue.LabelPriorityLevel]}] += m.GetCounter().GetValue()
	}
	return out
}

// rejected returns apiserver_flowcontrol_rejected_requests_total by "flow_schema/priority_level/reason".
func rejected(ctx context.Context, t *testing.T, admin kubernetes.Interface) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, m := range scrape(ctx, t, admin)[catalogue.APIServerFlowcontrolRejectedRequestsTotal.Name].GetMetric() {
		l := labelsOf(m)
		out[l[catalogue.LabelFlowSchema]+"/"+l[catalogue.LabelPriorityLevel]+"/"+l["reason"]] += m.GetCounter().GetValue()
	}
	return out
}

func labelsOf(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// delta returns after - before for every series of after.
func delta(before, after map[series]float64) map[series]float64 {
	out := map[series]float64{}
	for s, v := range after {
		if d := v - before[s]; d != 0 {
			out[s] = d
		}
	}
	return out
}

// expectDispatched compares the requests dispatched per series with want, exactly: nothing but
// the test's identities sends requests outside the exempt priority level.
func expectDispatched(t *testing.T, got, want map[series]float64) {
	t.Helper()
	for s, w := range want {
		if got[s] != w {
			t.Errorf("%s: %v requests dispatched, want %v", s, got[s], w)
		}
	}
	var all []string
	for s, v := range got {
		all = append(all, fmt.Sprintf("%s=%v", s, v))
	}
	sort.Strings(all)
	t.Logf("dispatched in this phase: %s", strings.Join(all, " "))
}
