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
	// ReasonInvalidSelector: spec.selector is not a valid label selector.
	ReasonInvalidSelector = "InvalidSelector"
	// ReasonStoreNotConfigured: spec.storeRef names a store the operator does not have.
	ReasonStoreNotConfigured = "StoreNotConfigured"
	// ReasonSnapshotBlocked: the newest Snapshot keeps failing to complete,
	// and no new one is taken until it does.
	ReasonSnapshotBlocked = "SnapshotBlocked"
	// ReasonNothingSelected: the newest Snapshot completed but is empty,
	// because the selector matches no object of the listed kinds.
	ReasonNothingSelected = "NothingSelected"
	// ReasonCleanupPending: the object is being deleted and its finalizer
	// waits for the store to delete its archives.
	ReasonCleanupPending = "CleanupPending"
	// ReasonCleanupIncomplete (an Event): the finalizer went at its deadline
	// without the store clean-up; the orphan collector deletes what is left.
	ReasonCleanupIncomplete = "CleanupIncomplete"
)

// Finalizers owned by the operator.
const (
	// BackupFinalizer removes a deleted Backup's archives from its store.
	BackupFinalizer = "backup.loopwatch.dev/archives"
	// SnapshotFinalizer removes a deleted Snapshot's archive from its store.
	SnapshotFinalizer = "backup.loopwatch.dev/archive"
)
