package catalogue

// KubePodServiceAccount is kube-state-metrics' pod-to-ServiceAccount series (a pod's
// spec.serviceAccountName). diagnose reads it to tie an audit actor whose events carry no pod
// (tokens not bound to a pod, managed clusters' audit logs) to the scraped pods that run as its
// service account; nothing else needs kube-state-metrics.
var KubePodServiceAccount = Metric{
	Name: "kube_pod_service_account", Type: Gauge, Source: SourceKubeStateMetrics,
	Help:   "The service account for a pod.",
	Labels: []string{"namespace", "pod", "uid", "service_account"},
}

var kubeStateMetrics = []Metric{KubePodServiceAccount}
