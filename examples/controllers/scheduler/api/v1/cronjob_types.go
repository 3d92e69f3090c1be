package v1

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConcurrencyPolicy says how to treat a run that is due while an earlier one is still active.
// +kubebuilder:validation:Enum=Allow;Forbid;Replace
type ConcurrencyPolicy string

// The concurrency policies.
const (
	// AllowConcurrent lets runs overlap.
	AllowConcurrent ConcurrencyPolicy = "Allow"
	// ForbidConcurrent skips a run while the previous one is active.
	ForbidConcurrent ConcurrencyPolicy = "Forbid"
	// ReplaceConcurrent cancels the active run and starts the new one.
	ReplaceConcurrent ConcurrencyPolicy = "Replace"
)

// CronJobSpec is when to run which Job, and how many finished Jobs to keep.
type CronJobSpec struct {
	// schedule in Cron format (five fields, or a descriptor such as @hourly or @every 30s).
	// +kubebuilder:validation:MinLength=1
	Schedule string `json:"schedule"`

	// startingDeadlineSeconds: a run missed by more than this is skipped.
	// +kubebuilder:validation:Minimum=0
	// +optional
	StartingDeadlineSeconds *int64 `json:"startingDeadlineSeconds,omitempty"`

	// concurrencyPolicy: Allow (default), Forbid or Replace.
	// +optional
	ConcurrencyPolicy ConcurrencyPolicy `json:"concurrencyPolicy,omitempty"`

	// suspend stops further runs; active Jobs are left alone.
	// +optional
	Suspend *bool `json:"suspend,omitempty"`

	// jobTemplate is the Job each run creates. It is stored without a schema (the Job API
	// validates it when the Job is created), which keeps this example's CRD small.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	JobTemplate batchv1.JobTemplateSpec `json:"jobTemplate"`

	// successfulJobsHistoryLimit: finished, successful Jobs to keep.
	// +kubebuilder:validation:Minimum=0
	// +optional
	SuccessfulJobsHistoryLimit *int32 `json:"successfulJobsHistoryLimit,omitempty"`

	// failedJobsHistoryLimit: finished, failed Jobs to keep.
	// +kubebuilder:validation:Minimum=0
	// +optional
	FailedJobsHistoryLimit *int32 `json:"failedJobsHistoryLimit,omitempty"`
}

// CronJobStatus is what the scheduler observed.
type CronJobStatus struct {
	// active are the running Jobs.
	// +optional
	// +listType=atomic
	Active []corev1.ObjectReference `json:"active,omitempty"`

	// lastScheduleTime is when a Job was last scheduled.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`
}

// CronJob runs a Job on a schedule.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
type CronJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   CronJobSpec   `json:"spec"`
	Status CronJobStatus `json:"status,omitempty"`
}

// CronJobList is a list of CronJobs.
//
// +kubebuilder:object:root=true
type CronJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CronJob `json:"items"`
}

func init() {
	SchemeBuilder.Register(&CronJob{}, &CronJobList{})
}
