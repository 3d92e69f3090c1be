package v1alpha1

// Condition types. Every object has a top-level Ready condition that
// summarises the others, as the Kubernetes API conventions recommend.
const (
	// ConditionReady is the summary condition.
	ConditionReady = "Ready"
	// ConditionScheduled says whether the Backup's snapshots are being taken on schedule.
	ConditionScheduled = "Scheduled"
	// ConditionStored says whether a Snapshot's archive is in the store.
	ConditionStored = "Stored"
)

// Condition reasons, in CamelCase as the conventions ask.
const (
	ReasonSnapshotCompleted  = "SnapshotCompleted"
	ReasonSnapshotInProgress = "SnapshotInProgress"
	ReasonSnapshotFailed     = "SnapshotFailed"
	ReasonNoSnapshotYet      = "NoSnapshotYet"
	ReasonSuspended          = "Suspended"
	ReasonOnSchedule         = "OnSchedule"
	ReasonArchiveWritten     = "ArchiveWritten"
	ReasonStoreError         = "StoreError"
	ReasonBackupNotFound     = "BackupNotFound"
	ReasonPending            = "Pending"
)

// Finalizers owned by the operator.
const (
	// BackupFinalizer removes a deleted Backup's archives from its store.
	BackupFinalizer = "backup.loopwatch.dev/archives"
	// SnapshotFinalizer removes a deleted Snapshot's archive from its store.
	SnapshotFinalizer = "backup.loopwatch.dev/archive"
)
