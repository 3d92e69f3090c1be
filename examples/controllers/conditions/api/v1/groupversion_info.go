// Package v1 holds the config.examples.loopwatch.dev/v1 API: AppConfig, an application's demand
// for a ConfigMap with certain keys, whose status says with conditions whether it is met.
//
// +kubebuilder:object:generate=true
// +groupName=config.examples.loopwatch.dev
package v1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "config.examples.loopwatch.dev", Version: "v1"}

	// SchemeBuilder registers the types of this API with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion} //nolint:staticcheck // kubebuilder's scaffold, as the controllers this example stands for have it

	// AddToScheme adds the types of this API to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
