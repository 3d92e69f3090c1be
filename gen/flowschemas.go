package gen

import (
	"encoding/json"
	"fmt"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// Per-controller FlowSchemas. API Priority and Fairness labels every request's metrics with the
// FlowSchema that classified it. By default all ServiceAccounts outside kube-system share one
// FlowSchema (service-accounts) and those inside share another (kube-system-service-accounts),
// so the API server cannot say which controller sends what. A FlowSchema that matches exactly one
// controller's ServiceAccount, is evaluated just before the default one that matches it today,
// and sends its requests to the same priority level, gives the controller its own flow_schema
// label and leaves its seats, queues and limits as they are.
//
// Within a priority level, fair queuing keys flows by FlowSchema name and distinguisher. The
// generated schema keeps the distinguisher of the default one: for an ordinary ServiceAccount
// (ByUser) the controller was one flow and stays one flow; in kube-system (ByNamespace) its
// requests to a namespace no longer share a flow with other kube-system ServiceAccounts' requests
// to the same namespace, which gives it at most its own fair share, never more seats.

// FlowSchemasFile is where the FlowSchemas go, relative to the output directory. It is written
// only when apf.controllers names a controller.
const FlowSchemasFile = "apf/loopwatch.flowschemas.yaml"

// defaultClassification is how the API server's default FlowSchemas classify the requests of a
// ServiceAccount (k8s.io/apiserver pkg/apis/flowcontrol/bootstrap/default.go; unchanged from
// Kubernetes 1.29, where flowcontrol v1 went GA, to 1.37; TestDefaultClassificationMatchesUpstream
// pins it to the linked k8s.io/apiserver).
type defaultClassification struct {
	// FlowSchema matches every request of the ServiceAccount that no schema before it takes;
	// Precedence, PriorityLevel and Distinguisher are its own.
	FlowSchema    string
	Precedence    int32
	PriorityLevel string
	Distinguisher flowcontrolv1.FlowDistinguisherMethodType
	// Keep is the last of the schemas evaluated before FlowSchema that take some of the
	// ServiceAccount's requests, and KeepPrecedence its matchingPrecedence: a generated schema
	// must be evaluated after it, or it would steal those requests from their priority level.
	Keep           string
	KeepPrecedence int32
}

var (
	// ServiceAccounts in kube-system run at workload-high; their lease get, create and update go
	// to system-leader-election first (precedence 100, priority level leader-election), which
	// must keep them: a controller's leader election must not wait behind its own work.
	kubeSystemServiceAccounts = defaultClassification{
		FlowSchema: "kube-system-service-accounts", Precedence: 900, PriorityLevel: "workload-high",
		Distinguisher: flowcontrolv1.FlowDistinguisherMethodByNamespaceType,
		Keep:          "system-leader-election", KeepPrecedence: 100,
	}
	// Every other ServiceAccount runs at workload-low. Only probes (precedence 2: GET /healthz,
	// /readyz, /livez of anyone, exempt) comes before: the generated schema's non-resource rule
	// would otherwise take those.
	serviceAccounts = defaultClassification{
		FlowSchema: "service-accounts", Precedence: 9000, PriorityLevel: "workload-low",
		Distinguisher: flowcontrolv1.FlowDistinguisherMethodByUserType,
		Keep:          "probes", KeepPrecedence: 2,
	}
)

// classify returns how the default FlowSchemas classify the ServiceAccounts of namespace.
func classify(namespace string) defaultClassification {
	if namespace == metav1.NamespaceSystem {
		return kubeSystemServiceAccounts
	}
	return serviceAccounts
}

// flowSchemaFor is one named controller's FlowSchema settings, defaults resolved.
type flowSchemaFor struct {
	controller      APFController
	namespace, name string
	priorityLevel   string
	precedence      int32
	today           defaultClassification
}

// resolve fills in the defaults of a validated controller entry.
func (c APFController) resolve() flowSchemaFor {
	ns, name, _ := strings.Cut(c.ServiceAccount, "/")
	today := classify(ns)
	f := flowSchemaFor{controller: c, namespace: ns, name: name, today: today,
		priorityLevel: c.PriorityLevel, precedence: c.MatchingPrecedence}
	if f.priorityLevel == "" {
		f.priorityLevel = today.PriorityLevel
	}
	if f.precedence == 0 {
		f.precedence = today.Precedence - 1
	}
	return f
}

// validate reports every problem of the controller list with its field path.
func (c APFConfig) validate(v *validator, path string) {
	names := map[string]int{}
	accounts := map[string]int{}
	for i, ctl := range c.Controllers {
		p := fmt.Sprintf("%s.controllers[%d]", path, i)
		switch {
		case ctl.Name == "":
			v.add(p+".name", "must be set")
		case len(validation.IsDNS1123Label(ctl.Name)) > 0:
			v.add(p+".name", "%q is not a DNS label: %s", ctl.Name, strings.Join(validation.IsDNS1123Label(ctl.Name), "; "))
		default:
			if j, dup := names[ctl.Name]; dup {
				v.add(p+".name", "%q is already the name of %s.controllers[%d]", ctl.Name, path, j)
			}
			names[ctl.Name] = i
		}
		ns, name, ok := strings.Cut(ctl.ServiceAccount, "/")
		switch {
		case !ok || strings.Contains(name, "/"):
			v.add(p+".serviceAccount", "%q is not \"namespace/name\"", ctl.ServiceAccount)
			continue
		case len(validation.IsDNS1123Label(ns)) > 0:
			v.add(p+".serviceAccount", "namespace %q is not a DNS label", ns)
			continue
		case len(validation.IsDNS1123Subdomain(name)) > 0:
			v.add(p+".serviceAccount", "name %q is not a DNS subdomain", name)
			continue
		}
		if j, dup := accounts[ctl.ServiceAccount]; dup {
			v.add(p+".serviceAccount", "%q already has a FlowSchema from %s.controllers[%d]", ctl.ServiceAccount, path, j)
		}
		accounts[ctl.ServiceAccount] = i
		if pl := ctl.PriorityLevel; pl != "" && len(validation.IsDNS1123Subdomain(pl)) > 0 {
			v.add(p+".priorityLevel", "%q is not a valid priority level name", pl)
		}
		if mp := ctl.MatchingPrecedence; mp != 0 {
			today := classify(ns)
			if mp <= today.KeepPrecedence || mp >= today.Precedence {
				v.add(p+".matchingPrecedence", "must be between %d (%s, which must keep the requests it takes) and %d (%s, which matches the ServiceAccount today), exclusive, got %d",
					today.KeepPrecedence, today.Keep, today.Precedence, today.FlowSchema, mp)
			}
		}
	}
}

// object is the FlowSchema of one controller: every request of its ServiceAccount,
// resource and non-resource, to one priority level.
func (f flowSchemaFor) object() flowcontrolv1.FlowSchema {
	all := []string{"*"}
	return flowcontrolv1.FlowSchema{
		TypeMeta: metav1.TypeMeta{APIVersion: flowcontrolv1.SchemeGroupVersion.String(), Kind: "FlowSchema"},
		ObjectMeta: metav1.ObjectMeta{
			Name: flowSchemaPrefix + f.controller.Name,
			Labels: map[string]string{
				"app.kubernetes.io/managed-by": "loopwatch",
				"app.kubernetes.io/part-of":    "loopwatch",
			},
		},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: f.priorityLevel},
			MatchingPrecedence:         f.precedence,
			DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: f.today.Distinguisher},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: []flowcontrolv1.Subject{{
					Kind:           flowcontrolv1.SubjectKindServiceAccount,
					ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: f.namespace, Name: f.name},
				}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{
					Verbs: all, APIGroups: all, Resources: all, ClusterScope: true, Namespaces: all,
				}},
				NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: all, NonResourceURLs: all}},
			}},
		},
	}
}

// comment explains one FlowSchema's placement to the reader of the generated file.
func (f flowSchemaFor) comment() string {
	s := fmt.Sprintf("# %s%s: ServiceAccount %s/%s. Today FlowSchema %s (matchingPrecedence %d) sends it to priority level %s;",
		flowSchemaPrefix, f.controller.Name, f.namespace, f.name, f.today.FlowSchema, f.today.Precedence, f.today.PriorityLevel)
	if f.priorityLevel == f.today.PriorityLevel {
		s += fmt.Sprintf(" this one (%d) keeps it there, and %s (%d) still takes the requests it takes today.", f.precedence, f.today.Keep, f.today.KeepPrecedence)
	} else {
		s += fmt.Sprintf(" this one (%d) sends it to %s, as configured.", f.precedence, f.priorityLevel)
	}
	return s + "\n"
}

// flowSchemaFiles renders the FlowSchemas of the named controllers and a kustomization beside
// them; nothing when no controller is named.
func (c Config) flowSchemaFiles() ([]File, error) {
	if len(c.APF.Controllers) == 0 {
		return nil, nil
	}
	var b strings.Builder
	b.WriteString("# " + Header + "\n")
	b.WriteString("# One API Priority and Fairness FlowSchema per controller: its requests keep their priority level\n")
	b.WriteString("# and get their own flow_schema label in apiserver_flowcontrol_* metrics.\n")
	for _, ctl := range c.APF.Controllers {
		b.WriteString(ctl.resolve().comment())
	}
	for i, ctl := range c.APF.Controllers {
		if i > 0 {
			b.WriteString("---\n")
		}
		doc, err := manifestYAML(ctl.resolve().object())
		if err != nil {
			return nil, fmt.Errorf("flowschema of controller %q: %w", ctl.Name, err)
		}
		b.Write(doc)
	}
	return []File{{FlowSchemasFile, []byte(b.String())}, kustomization("apf", FlowSchemasFile)}, nil
}

// manifestYAML writes a Kubernetes object as YAML through its JSON form, as kubectl does, without
// the fields a new object leaves empty (metadata.creationTimestamp, status).
func manifestYAML(obj any) ([]byte, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	delete(m, "status")
	if meta, ok := m["metadata"].(map[string]any); ok {
		delete(meta, "creationTimestamp")
	}
	return yaml.Marshal(m)
}
