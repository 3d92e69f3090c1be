package catalogue

import "strings"

// Label names shared by several families or by a producer and its consumers.
const (
	// LabelController names the controller: controller-runtime sets it to the controller's name
	// (by default the lower-cased kind it reconciles), and instrument uses the same value, so the
	// rules join the two on it.
	LabelController = "controller"

	// LabelActor names the writer of an audited request: a top-K user or service account, or
	// "other".
	LabelActor = "actor"
	// LabelVerb is the Kubernetes verb of a request (get, list, patch, ...), lower case.
	LabelVerb     = "verb"
	LabelGroup    = "group"
	LabelResource = "resource"
	// LabelSubresource is empty for the object itself.
	LabelSubresource = "subresource"

	// LabelObjectNamespace and LabelObjectName name the object a top-offender gauge is about. They
	// are not `namespace` and `name`: Prometheus attaches the scrape target's own `namespace` (the
	// exporter pod's), and an exposed label of the same name would be renamed to
	// exported_namespace, breaking every rule and panel that reads it.
	LabelObjectNamespace = "object_namespace"
	LabelObjectName      = "object_name"

	// LabelFieldManager names the field manager an actor writes an offending object under: the
	// fieldManager query parameter, else the product part of its user agent (as the API server
	// records it in managedFields). The fight gauge has one per actor (_a, _b).
	LabelFieldManager = "field_manager"
	// LabelMutatingWebhook names the mutating admission webhook that changed an offending
	// object's writes, "<configuration>/<webhook>"; empty when none did.
	LabelMutatingWebhook = "mutating_webhook"

	// LabelActorNamespace and LabelActorServiceAccount split a service-account actor
	// (system:serviceaccount:<namespace>:<name>): a ServiceAccount lives in the namespace of the
	// pods that run as it, so they tie the actor to a workload. Empty for other actors.
	LabelActorNamespace      = "actor_namespace"
	LabelActorServiceAccount = "actor_service_account"
	// LabelActorPod is the pod behind the actor's bound service-account token
	// (user.extra["authentication.kubernetes.io/pod-name"]) on its latest write: a scraped target
	// carries the same pod and namespace, which names the actor's job. Empty when the token is not
	// bound to a pod, and for impersonated writes (the pod is the impersonator's). The fight gauge
	// has one of each per actor (_a, _b).
	LabelActorPod = "actor_pod"

	// LabelAccess is "read" or "write", derived from the verb, so a rule can sum writes without
	// listing verbs.
	LabelAccess = "access"
	// LabelFinalizer is the finalizer an object waits on.
	LabelFinalizer = "finalizer"
)

// The labels of the API server's API Priority and Fairness families: the FlowSchema that
// classified a request and the priority level that FlowSchema sends it to.
const (
	LabelFlowSchema    = "flow_schema"
	LabelPriorityLevel = "priority_level"
)

// serviceAccountPrefix starts the username of a service account.
const serviceAccountPrefix = "system:serviceaccount:"

// SplitServiceAccount returns the namespace and name of a service-account actor
// (system:serviceaccount:<namespace>:<name>), and false for any other actor. The exporter labels
// offenders with them and diagnose ties actors to workloads with them.
func SplitServiceAccount(actor string) (namespace, name string, ok bool) {
	rest, ok := strings.CutPrefix(actor, serviceAccountPrefix)
	if !ok {
		return "", "", false
	}
	namespace, name, ok = strings.Cut(rest, ":")
	if !ok || namespace == "" || name == "" || strings.Contains(name, ":") {
		return "", "", false
	}
	return namespace, name, true
}
