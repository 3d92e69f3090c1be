// Package v1alpha1 holds the backup.loopwatch.dev/v1alpha1 API: Backup (what
// to back up, how often, how many to keep) and Snapshot (one point-in-time
// copy written as an archive to a store).
//
// +kubebuilder:object:generate=true
// +groupName=backup.loopwatch.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "backup.loopwatch.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this API with a scheme. It depends on apimachinery
	// only, so that clients can import this API without controller-runtime.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this API to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// addKnownTypes registers Backup and Snapshot, and their lists, under GroupVersion.
func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Backup{}, &BackupList{}, &Snapshot{}, &SnapshotList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
