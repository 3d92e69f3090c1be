package catalogue_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/loopwatch/loopwatch/catalogue"
	"github.com/loopwatch/loopwatch/catalogue/cataloguetest"
)

// The audit families are checked against the k8s.io/apiserver this module builds with, through
// the functions the API server's audit backends call and the registry its /metrics serves.
func TestKubeAPIServerExposesWhatIsDeclared(t *testing.T) {
	audit.ObserveEvent(context.Background())
	audit.HandlePluginError("webhook", errors.New("the backend is down"), &auditinternal.Event{})

	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var audits []*dto.MetricFamily
	for _, f := range families {
		switch f.GetName() {
		case "apiserver_audit_level_total", "apiserver_audit_requests_rejected_total":
			// registered by the same file; no rule reads them
		default:
			if strings.HasPrefix(f.GetName(), "apiserver_audit_") {
				audits = append(audits, f)
			}
		}
	}
	if err := cataloguetest.Compare(audits, catalogue.FromSource(catalogue.SourceKubeAPIServer)); err != nil {
		t.Error(err)
	}
}
