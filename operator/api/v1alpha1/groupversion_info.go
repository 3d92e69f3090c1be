// Package v1alpha1 holds the backup.loopwatch.dev/v1alpha1 API: Backup (what
// to back up, how often, how many to keep) and Snapshot (one point-in-time
// copy written as an archive to a store).
//
// +kubebuilder:object:generate=true
// +groupName=backup.loopwatch.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "backup.loopwatch.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this API with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this API to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
