package controller

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

// Limits on names derived from a Backup's name, which may be up to 253
// characters long.
const (
	// maxLabelValue is Kubernetes' limit on a label value.
	maxLabelValue = 63
	// maxSnapshotName keeps "<snapshot>.tar.gz.sha256", the longest file a
	// filesystem store writes, within the usual 255-byte file name limit.
	maxSnapshotName = 255 - len(".tar.gz.sha256")
	// hashSuffixLen is the length of the hex digest that keeps shortened
	// names apart.
	hashSuffixLen = 8
)

// BackupLabelValue is the value of SnapshotBackupLabel for a Backup: its name,
// or, when the name is longer than a label value may be, a prefix of it and a
// hash of the whole name.
func BackupLabelValue(backup string) string {
	return shorten(backup, maxLabelValue)
}

// snapshotName names the Snapshot taken at now. The name is deterministic per
// second, so two writers racing on the same schedule slot collide on the name
// (AlreadyExists) instead of creating duplicates.
func snapshotName(backup string, now time.Time) string {
	suffix := fmt.Sprintf("-%d", now.Unix())
	return shorten(backup, maxSnapshotName-len(suffix)) + suffix
}

// shorten returns name when it fits in n characters, otherwise a prefix of it
// and a hash of the whole name, n characters in all. The prefix loses any
// trailing '-' or '.', so the result is still a DNS subdomain and a label
// value when name is one.
func shorten(name string, n int) string {
	if len(name) <= n {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	hash := hex.EncodeToString(sum[:])[:hashSuffixLen]
	prefix := strings.TrimRight(name[:n-hashSuffixLen-1], "-.")
	return prefix + "-" + hash
}
