package gen

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	"sigs.k8s.io/yaml"
)

// TestDefaultClassificationMatchesUpstream derives, from the API server's own default FlowSchemas
// (the k8s.io/apiserver this module links; its bootstrap/default.go is identical to that of
// v0.36.3, which kube-apiserver v1.36.3 is built from), which schema classifies every request of
// a ServiceAccount and which schemas before it take some of them, and compares with the table the
// generator relies on.
func TestDefaultClassificationMatchesUpstream(t *testing.T) {
	schemas := slices.Concat(bootstrap.MandatoryFlowSchemas, bootstrap.SuggestedFlowSchemas)
	slices.SortStableFunc(schemas, func(a, b *flowcontrolv1.FlowSchema) int {
		if a.Spec.MatchingPrecedence != b.Spec.MatchingPrecedence {
			return int(a.Spec.MatchingPrecedence - b.Spec.MatchingPrecedence)
		}
		return strings.Compare(a.Name, b.Name)
	})
	for _, tt := range []struct {
		namespace string
		want      defaultClassification
	}{
		{"kube-system", kubeSystemServiceAccounts},
		{"backup-system", serviceAccounts},
	} {
		t.Run(tt.namespace, func(t *testing.T) {
			var got defaultClassification
			for _, fs := range schemas {
				all, some := matchesServiceAccount(fs, tt.namespace, "any-controller")
				if all {
					got.FlowSchema = fs.Name
					got.Precedence = fs.Spec.MatchingPrecedence
					got.PriorityLevel = fs.Spec.PriorityLevelConfiguration.Name
					if fs.Spec.DistinguisherMethod != nil {
						got.Distinguisher = fs.Spec.DistinguisherMethod.Type
					}
					break
				}
				if some {
					got.Keep, got.KeepPrecedence = fs.Name, fs.Spec.MatchingPrecedence
				}
			}
			if got != tt.want {
				t.Errorf("upstream defaults classify a ServiceAccount of %s as\n%+v\nthe generator assumes\n%+v", tt.namespace, got, tt.want)
			}
			if c := classify(tt.namespace); c != tt.want {
				t.Errorf("classify(%q) = %+v", tt.namespace, c)
			}
		})
	}
}

// matchesServiceAccount reports whether fs matches every request of the ServiceAccount
// namespace/name (a rule for every verb, group, resource, namespace, cluster scope and
// non-resource URL), or only some of them.
func matchesServiceAccount(fs *flowcontrolv1.FlowSchema, namespace, name string) (all, some bool) {
	user := "system:serviceaccount:" + namespace + ":" + name
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}
	for _, r := range fs.Spec.Rules {
		subject := slices.ContainsFunc(r.Subjects, func(s flowcontrolv1.Subject) bool {
			switch s.Kind {
			case flowcontrolv1.SubjectKindUser:
				return s.User.Name == user || s.User.Name == "*"
			case flowcontrolv1.SubjectKindGroup:
				return slices.Contains(groups, s.Group.Name)
			case flowcontrolv1.SubjectKindServiceAccount:
				return s.ServiceAccount.Namespace == namespace && (s.ServiceAccount.Name == name || s.ServiceAccount.Name == "*")
			}
			return false
		})
		if !subject {
			continue
		}
		some = true
		everyResource := slices.ContainsFunc(r.ResourceRules, func(rr flowcontrolv1.ResourcePolicyRule) bool {
			return slices.Equal(rr.Verbs, []string{"*"}) && slices.Equal(rr.APIGroups, []string{"*"}) &&
				slices.Equal(rr.Resources, []string{"*"}) && slices.Equal(rr.Namespaces, []string{"*"}) && rr.ClusterScope
		})
		everyURL := slices.ContainsFunc(r.NonResourceRules, func(nr flowcontrolv1.NonResourcePolicyRule) bool {
			return slices.Equal(nr.Verbs, []string{"*"}) && slices.Equal(nr.NonResourceURLs, []string{"*"})
		})
		if everyResource && everyURL {
			all = true
		}
	}
	return all, some
}

// apfTestConfig names controllers in and out of kube-system, one with its own priority level.
func apfTestConfig(t *testing.T) Config {
	t.Helper()
	cfg, err := Load("testdata/config/apf.good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// decodeFlowSchemas reads the generated file back strictly into the API's own type.
func decodeFlowSchemas(t *testing.T, content []byte) []flowcontrolv1.FlowSchema {
	t.Helper()
	var out []flowcontrolv1.FlowSchema
	for _, doc := range bytes.Split(content, []byte("\n---\n")) {
		var fs flowcontrolv1.FlowSchema
		if err := yaml.UnmarshalStrict(doc, &fs); err != nil {
			t.Fatalf("decode FlowSchema: %v\n%s", err, doc)
		}
		out = append(out, fs)
	}
	return out
}

func TestFlowSchemasKeepEachControllerOnItsPriorityLevel(t *testing.T) {
	m, err := Build(apfTestConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	fs := files(t, m)
	content, ok := fs[FlowSchemasFile]
	if !ok {
		t.Fatalf("no %s among the generated files", FlowSchemasFile)
	}
	if k := string(fs["apf/kustomization.yaml"]); !strings.Contains(k, "- loopwatch.flowschemas.yaml") {
		t.Errorf("apf/kustomization.yaml does not list the FlowSchemas:\n%s", k)
	}
	type want struct {
		name, namespace, serviceAccount, priorityLevel string
		precedence                                     int32
		distinguisher                                  flowcontrolv1.FlowDistinguisherMethodType
	}
	wants := []want{
		{"loopwatch-backup-operator", "backup-system", "backup-operator", "workload-low", 8999, flowcontrolv1.FlowDistinguisherMethodByUserType},
		{"loopwatch-tier-controller", "kube-system", "tier-controller", "workload-high", 899, flowcontrolv1.FlowDistinguisherMethodByNamespaceType},
		{"loopwatch-batch", "batch", "batch-controller", "global-default", 4999, flowcontrolv1.FlowDistinguisherMethodByUserType},
	}
	got := decodeFlowSchemas(t, content)
	if len(got) != len(wants) {
		t.Fatalf("%d FlowSchemas, want %d", len(got), len(wants))
	}
	for i, w := range wants {
		g := got[i]
		if g.APIVersion != "flowcontrol.apiserver.k8s.io/v1" || g.Kind != "FlowSchema" || g.Name != w.name {
			t.Errorf("FlowSchema %d is %s %s %q, want flowcontrol.apiserver.k8s.io/v1 FlowSchema %q", i, g.APIVersion, g.Kind, g.Name, w.name)
		}
		s := g.Spec
		if s.PriorityLevelConfiguration.Name != w.priorityLevel || s.MatchingPrecedence != w.precedence || s.DistinguisherMethod == nil || s.DistinguisherMethod.Type != w.distinguisher {
			t.Errorf("%s: priority level %q, precedence %d, distinguisher %v; want %q, %d, %s", w.name, s.PriorityLevelConfiguration.Name, s.MatchingPrecedence, s.DistinguisherMethod, w.priorityLevel, w.precedence, w.distinguisher)
		}
		all, _ := matchesServiceAccount(&g, w.namespace, w.serviceAccount)
		if !all {
			t.Errorf("%s does not match every request of %s/%s", w.name, w.namespace, w.serviceAccount)
		}
		if _, some := matchesServiceAccount(&g, w.namespace, "another"); some {
			t.Errorf("%s matches another ServiceAccount of %s", w.name, w.namespace)
		}
	}
	for _, line := range []string{
		"# loopwatch-backup-operator: ServiceAccount backup-system/backup-operator. Today FlowSchema service-accounts (matchingPrecedence 9000) sends it to priority level workload-low; this one (8999) keeps it there, and probes (2) still takes the requests it takes today.",
		"# loopwatch-tier-controller: ServiceAccount kube-system/tier-controller. Today FlowSchema kube-system-service-accounts (matchingPrecedence 900) sends it to priority level workload-high; this one (899) keeps it there, and system-leader-election (100) still takes the requests it takes today.",
		"# loopwatch-batch: ServiceAccount batch/batch-controller. Today FlowSchema service-accounts (matchingPrecedence 9000) sends it to priority level workload-low; this one (4999) sends it to global-default, as configured.",
	} {
		if !strings.Contains(string(content), line+"\n") {
			t.Errorf("the file does not explain %q", strings.Fields(line)[1])
		}
	}
	for _, gone := range []string{"creationTimestamp", "status:"} {
		if strings.Contains(string(content), gone) {
			t.Errorf("the file holds %q", gone)
		}
	}
}

func TestFlowSchemasOnlyWhenControllersAreNamed(t *testing.T) {
	for p := range files(t, buildDefault(t)) {
		if strings.HasPrefix(p, "apf/") {
			t.Errorf("the default config, which names no controller, writes %s", p)
		}
	}
}

func TestFlowSchemasAreDeterministic(t *testing.T) {
	build := func() []byte {
		m, err := Build(apfTestConfig(t))
		if err != nil {
			t.Fatal(err)
		}
		return files(t, m)[FlowSchemasFile]
	}
	if a, b := build(), build(); !bytes.Equal(a, b) {
		t.Error("the FlowSchemas differ between two runs")
	}
}
