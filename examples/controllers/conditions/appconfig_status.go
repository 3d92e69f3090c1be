package conditions

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1 "github.com/loopwatch/loopwatch/examples/controllers/conditions/api/v1"
)

// Reasons of the AppConfig conditions.
const (
	ReasonFound       = "Found"
	ReasonNotFound    = "NotFound"
	ReasonKeysPresent = "KeysPresent"
	ReasonMissingKeys = "MissingKeys"
)

// setConditions sets ConfigMapFound and Ready from cm (nil when it does not exist) and the
// observed generation. meta.SetStatusCondition moves lastTransitionTime only when a condition's
// status changes, so a pass that finds what the previous one found leaves the status as it was.
func setConditions(app *configv1.AppConfig, cm *corev1.ConfigMap) {
	gen := app.Generation
	app.Status.ObservedGeneration = gen
	if cm == nil {
		meta.SetStatusCondition(&app.Status.Conditions, metav1.Condition{
			Type: configv1.ConditionConfigMapFound, Status: metav1.ConditionFalse, ObservedGeneration: gen,
			Reason: ReasonNotFound, Message: fmt.Sprintf("ConfigMap %q does not exist", app.Spec.ConfigMapName),
		})
		meta.SetStatusCondition(&app.Status.Conditions, metav1.Condition{
			Type: configv1.ConditionReady, Status: metav1.ConditionFalse, ObservedGeneration: gen,
			Reason: ReasonNotFound, Message: fmt.Sprintf("ConfigMap %q does not exist", app.Spec.ConfigMapName),
		})
		return
	}
	meta.SetStatusCondition(&app.Status.Conditions, metav1.Condition{
		Type: configv1.ConditionConfigMapFound, Status: metav1.ConditionTrue, ObservedGeneration: gen,
		Reason: ReasonFound, Message: fmt.Sprintf("ConfigMap %q exists", cm.Name),
	})
	var missing []string
	for _, k := range app.Spec.RequiredKeys {
		if _, ok := cm.Data[k]; !ok {
			missing = append(missing, k)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		meta.SetStatusCondition(&app.Status.Conditions, metav1.Condition{
			Type: configv1.ConditionReady, Status: metav1.ConditionFalse, ObservedGeneration: gen,
			Reason: ReasonMissingKeys, Message: "missing keys: " + strings.Join(missing, ", "),
		})
		return
	}
	meta.SetStatusCondition(&app.Status.Conditions, metav1.Condition{
		Type: configv1.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: gen,
		Reason: ReasonKeysPresent, Message: "every required key is present",
	})
}
