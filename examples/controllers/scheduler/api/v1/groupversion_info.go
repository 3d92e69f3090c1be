// Package v1 holds the batch.examples.loopwatch.dev/v1 API: CronJob, the kubebuilder tutorial's
// scheduler of Jobs.
//
// +kubebuilder:object:generate=true
// +groupName=batch.examples.loopwatch.dev
package v1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "batch.examples.loopwatch.dev", Version: "v1"}

	// SchemeBuilder registers the types of this API with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion} //nolint:staticcheck // kubebuilder's scaffold, as the controllers this example stands for have it

	// AddToScheme adds the types of this API to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
