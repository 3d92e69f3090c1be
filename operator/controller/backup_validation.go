package controller

import (
	"fmt"
	"strings"

	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	backupv1 "github.com/loopwatch/loopwatch/operator/api/v1alpha1"
)

// specProblem is why the operator cannot act on a Backup's spec: the Ready
// condition's reason, and a message that names the field.
type specProblem struct {
	reason  string
	message string
}

// validateBackupSpec finds what the CRD schema cannot refuse at admission:
// label syntax in the selector (checking it in CEL costs more than the API
// server allows for unbounded maps and lists) and a storeRef naming a store
// that is not configured in this operator. Nil when the spec is usable.
func validateBackupSpec(b *backupv1.Backup, stores Stores) *specProblem {
	path := field.NewPath("spec", "selector")
	if errs := metav1validation.ValidateLabelSelector(&b.Spec.Selector, metav1validation.LabelSelectorValidationOptions{}, path); len(errs) > 0 {
		return &specProblem{reason: backupv1.ReasonInvalidSelector, message: errs.ToAggregate().Error()}
	}
	if _, err := stores.Get(b.StoreName()); err != nil {
		return &specProblem{reason: backupv1.ReasonStoreNotConfigured, message: fmt.Sprintf(
			"spec.storeRef.name: store %q is not configured in the operator (configured: %s)", b.StoreName(), strings.Join(stores.Names(), ", "))}
	}
	return nil
}
