package controller

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestNamesDerivedFromABackupNameStayWithinTheirLimits(t *testing.T) {
	cases := []struct {
		name   string
		backup string
		// short: the derived names are the Backup's name itself.
		short bool
	}{
		{name: "keeps a short name as it is", backup: "shop", short: true},
		{name: "keeps a name of exactly 63 characters as the label value", backup: strings.Repeat("a", 63), short: true},
		{name: "hashes a 64-character name into the label", backup: strings.Repeat("a", 64)},
		{name: "hashes the longest Backup name", backup: strings.Repeat("b", 253)},
		{name: "drops a dot or dash left at the cut", backup: strings.Repeat("a", 53) + "." + strings.Repeat("c", 100)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			label := BackupLabelValue(c.backup)
			if errs := validation.IsValidLabelValue(label); len(errs) > 0 {
				t.Errorf("label value %q: %v", label, errs)
			}
			if c.short && label != c.backup {
				t.Errorf("label value %q, want the name itself", label)
			}
			snap := snapshotName(c.backup, t0)
			if errs := validation.IsDNS1123Subdomain(snap); len(errs) > 0 {
				t.Errorf("snapshot name %q: %v", snap, errs)
			}
			if file := snap + ".tar.gz.sha256"; len(file) > 255 {
				t.Errorf("checksum file name of %d bytes exceeds 255", len(file))
			}
			if snapshotName(c.backup, t0) != snap || BackupLabelValue(c.backup) != label {
				t.Error("the same Backup and second gave two names")
			}
		})
	}
	if BackupLabelValue(strings.Repeat("a", 64)) == BackupLabelValue(strings.Repeat("a", 65)) {
		t.Error("two long names that share a prefix got the same label value")
	}
}
