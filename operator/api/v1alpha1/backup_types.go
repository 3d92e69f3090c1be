package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BackupKind names a kind of object a Backup can copy.
// +kubebuilder:validation:Enum=ConfigMap;Secret
type BackupKind string

// The kinds a Backup can copy.
const (
	KindConfigMap BackupKind = "ConfigMap"
	KindSecret    BackupKind = "Secret"
)

// BackupSpec says which objects to back up, how often and how many snapshots to keep.
type BackupSpec struct {
	// selector selects, by label, the objects of the Backup's namespace to copy.
	// An empty selector selects every object of the listed kinds. The API
	// server refuses unknown operators, missing or extra values and label
	// values over 63 characters; the operator checks the rest of the label
	// syntax and reports a bad selector as Ready=False, reason InvalidSelector.
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, e.operator in ['In', 'NotIn', 'Exists', 'DoesNotExist'])",message="operator must be In, NotIn, Exists or DoesNotExist",fieldPath=".matchExpressions"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, e.operator in ['In', 'NotIn'] ? has(e.values) && size(e.values) > 0 : !has(e.values) || size(e.values) == 0)",message="values must be set for In and NotIn and empty for Exists and DoesNotExist",fieldPath=".matchExpressions"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchLabels) || self.matchLabels.all(k, size(self.matchLabels[k]) <= 63)",message="label values must be at most 63 characters",fieldPath=".matchLabels"
	// +required
	Selector metav1.LabelSelector `json:"selector"`

	// kinds are the kinds of object to copy.
	// +kubebuilder:default={ConfigMap,Secret}
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=2
	// +listType=set
	// +optional
	Kinds []BackupKind `json:"kinds,omitempty"`

	// intervalSeconds is the time between two snapshots.
	// +kubebuilder:default=3600
	// +kubebuilder:validation:Minimum=10
	// +kubebuilder:validation:Maximum=2678400
	// +optional
	IntervalSeconds int32 `json:"intervalSeconds,omitempty"`

	// retention is how many completed snapshots to keep; older ones are deleted
	// together with their archives.
	// +kubebuilder:default=5
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	Retention int32 `json:"retention,omitempty"`

	// storeRef names the store, configured in the operator, that receives the archives.
	// +kubebuilder:default={name: default}
	// +optional
	StoreRef *StoreReference `json:"storeRef,omitempty"`

	// suspend stops new snapshots from being taken; existing ones are kept.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// StoreReference names a store configured in the operator.
type StoreReference struct {
	// name of the store.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +required
	Name string `json:"name"`
}

// SnapshotReference points at a Snapshot of the same namespace.
type SnapshotReference struct {
	// name of the Snapshot.
	// +required
	Name string `json:"name"`
	// completionTime is when its archive was written.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
}

// BackupStatus is what the controller observed.
type BackupStatus struct {
	// conditions: Ready (summary) and Scheduled, each with observedGeneration.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the generation this status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// lastSnapshot is the newest completed Snapshot.
	// +optional
	LastSnapshot *SnapshotReference `json:"lastSnapshot,omitempty"`

	// snapshots is how many Snapshots of this Backup exist.
	// +optional
	Snapshots int32 `json:"snapshots,omitempty"`

	// completedSnapshots is how many of them completed.
	// +optional
	CompletedSnapshots int32 `json:"completedSnapshots,omitempty"`
}

// Backup copies the ConfigMaps and Secrets of its namespace that match a
// selector into archives, on a schedule, keeping the newest few.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=loopwatch
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Interval",type=integer,JSONPath=`.spec.intervalSeconds`
// +kubebuilder:printcolumn:name="Last snapshot",type=string,JSONPath=`.status.lastSnapshot.name`
// +kubebuilder:printcolumn:name="Snapshots",type=integer,JSONPath=`.status.snapshots`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Backup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired backup.
	// +required
	Spec BackupSpec `json:"spec"`
	// status is what the controller observed.
	// +optional
	Status BackupStatus `json:"status,omitempty"`
}

// BackupList is a list of Backups.
//
// +kubebuilder:object:root=true
type BackupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Backup `json:"items"`
}

// StoreName returns the name of the Backup's store, "default" when unset.
func (b *Backup) StoreName() string {
	if b.Spec.StoreRef == nil || b.Spec.StoreRef.Name == "" {
		return "default"
	}
	return b.Spec.StoreRef.Name
}
