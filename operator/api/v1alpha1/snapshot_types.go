package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SnapshotPhase is a simple summary of where a Snapshot is in its life; the
// conditions carry the detail.
// +kubebuilder:validation:Enum=Pending;Completed;Failed
type SnapshotPhase string

// The phases of a Snapshot.
const (
	SnapshotPending   SnapshotPhase = "Pending"
	SnapshotCompleted SnapshotPhase = "Completed"
	SnapshotFailed    SnapshotPhase = "Failed"
)

// SnapshotSpec names the Backup the Snapshot belongs to.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable"
type SnapshotSpec struct {
	// backupName is the Backup, in the same namespace, this Snapshot copies.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	BackupName string `json:"backupName"`
}

// SnapshotStatus is what the controller observed.
type SnapshotStatus struct {
	// phase: Pending, Completed or Failed.
	// +optional
	Phase SnapshotPhase `json:"phase,omitempty"`

	// conditions: Ready (summary) and Stored, each with observedGeneration.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// location is where the archive is, in the store's own terms (a file path, an object key).
	// +optional
	Location string `json:"location,omitempty"`

	// sizeBytes is the archive's size.
	// +optional
	SizeBytes int64 `json:"sizeBytes,omitempty"`

	// checksum is the archive's digest, "sha256:<hex>".
	// +optional
	Checksum string `json:"checksum,omitempty"`

	// objectCount is how many objects the archive holds.
	// +optional
	ObjectCount int32 `json:"objectCount,omitempty"`

	// completionTime is when the archive was written.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
}

// Snapshot is one point-in-time copy of a Backup's objects, owned by the Backup.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=loopwatch
// +kubebuilder:printcolumn:name="Backup",type=string,JSONPath=`.spec.backupName`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Objects",type=integer,JSONPath=`.status.objectCount`
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=`.status.sizeBytes`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Snapshot struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec names the Backup.
	// +required
	Spec SnapshotSpec `json:"spec"`
	// status is what the controller observed.
	// +optional
	Status SnapshotStatus `json:"status,omitempty"`
}

// SnapshotList is a list of Snapshots.
//
// +kubebuilder:object:root=true
type SnapshotList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Snapshot `json:"items"`
}
