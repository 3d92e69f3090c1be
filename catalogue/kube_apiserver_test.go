package catalogue_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/apiserver/pkg/audit"
	fcmetrics "k8s.io/apiserver/pkg/util/flowcontrol/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/loopwatch/loopwatch/catalogue"
	"github.com/loopwatch/loopwatch/catalogue/cataloguetest"
)

// The kube-apiserver families are checked against the k8s.io/apiserver this module builds with,
// through the functions the API server's audit backends and its APF filter call and the registry
// its /metrics serves. (e2e's APF test checks the same declarations against a real
// kube-apiserver's /metrics.)
func TestKubeAPIServerExposesWhatIsDeclared(t *testing.T) {
	ctx := context.Background()
	audit.ObserveEvent(ctx)
	audit.HandlePluginError("webhook", errors.New("the backend is down"), &auditinternal.Event{})

	fcmetrics.Register()
	const pl, fs = "workload-low", "loopwatch-backup-operator"
	fcmetrics.AddDispatch(ctx, pl, fs)
	fcmetrics.AddReject(ctx, pl, fs, "queue-full")
	fcmetrics.ObserveWaitingDuration(ctx, pl, fs, "true", 30*time.Millisecond)
	fcmetrics.AddRequestsInQueues(ctx, pl, fs, 1)
	fcmetrics.AddRequestsExecuting(ctx, pl, fs, 1)

	declared := map[string]bool{}
	for _, m := range catalogue.FromSource(catalogue.SourceKubeAPIServer) {
		declared[m.Name] = true
	}
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []*dto.MetricFamily
	for _, f := range families {
		switch name := f.GetName(); {
		case name == "apiserver_audit_level_total", name == "apiserver_audit_requests_rejected_total":
			// registered by the same file; no rule reads them
		case strings.HasPrefix(name, "apiserver_audit_"):
			got = append(got, f)
		case strings.HasPrefix(name, "apiserver_flowcontrol_") && declared[name]:
			// APF registers some thirty families; the catalogue declares those loopwatch reads.
			got = append(got, f)
		}
	}
	if err := cataloguetest.Compare(got, catalogue.FromSource(catalogue.SourceKubeAPIServer)); err != nil {
		t.Error(err)
	}
}
