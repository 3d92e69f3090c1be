package conditions

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1 "github.com/loopwatch/loopwatch/examples/controllers/conditions/api/v1"
)

func TestSetConditions(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"endpoint": "x", "timeout": "5s"}}
	cases := []struct {
		name               string
		cm                 *corev1.ConfigMap
		required           []string
		wantFound, wantRdy metav1.ConditionStatus
		wantReason         string
	}{
		{name: "is not ready without the ConfigMap", required: []string{"endpoint"},
			wantFound: metav1.ConditionFalse, wantRdy: metav1.ConditionFalse, wantReason: ReasonNotFound},
		{name: "is not ready while a required key is missing", cm: cm, required: []string{"timeout", "endpoint", "retries", "feature"},
			wantFound: metav1.ConditionTrue, wantRdy: metav1.ConditionFalse, wantReason: ReasonMissingKeys},
		{name: "is ready with every required key", cm: cm, required: []string{"endpoint", "timeout"},
			wantFound: metav1.ConditionTrue, wantRdy: metav1.ConditionTrue, wantReason: ReasonKeysPresent},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			app := &configv1.AppConfig{ObjectMeta: metav1.ObjectMeta{Generation: 3}, Spec: configv1.AppConfigSpec{ConfigMapName: "settings", RequiredKeys: c.required}}
			setConditions(app, c.cm)
			found := meta.FindStatusCondition(app.Status.Conditions, configv1.ConditionConfigMapFound)
			ready := meta.FindStatusCondition(app.Status.Conditions, configv1.ConditionReady)
			if found == nil || ready == nil || found.Status != c.wantFound || ready.Status != c.wantRdy || ready.Reason != c.wantReason {
				t.Fatalf("conditions %+v, want found %s, ready %s (%s)", app.Status.Conditions, c.wantFound, c.wantRdy, c.wantReason)
			}
			if ready.ObservedGeneration != 3 || app.Status.ObservedGeneration != 3 {
				t.Errorf("observed generation %d/%d, want 3", ready.ObservedGeneration, app.Status.ObservedGeneration)
			}
		})
	}
}

// A pass that finds what the previous one found must leave the status as it was, or the
// controller's own status write would wake it again.
func TestSetConditionsKeepsLastTransitionTimeWhenNothingChanged(t *testing.T) {
	app := &configv1.AppConfig{Spec: configv1.AppConfigSpec{ConfigMapName: "settings", RequiredKeys: []string{"a"}}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"a": "1"}}
	setConditions(app, cm)
	past := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	for i := range app.Status.Conditions {
		app.Status.Conditions[i].LastTransitionTime = past
	}
	before := app.Status.DeepCopy()
	setConditions(app, cm)
	for i, c := range app.Status.Conditions {
		if c != before.Conditions[i] {
			t.Errorf("condition %s changed: %+v, was %+v", c.Type, c, before.Conditions[i])
		}
	}
}
