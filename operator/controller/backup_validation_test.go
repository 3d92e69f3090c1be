package controller

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupv1 "github.com/loopwatch/loopwatch/operator/api/v1alpha1"
	"github.com/loopwatch/loopwatch/operator/store"
)

func TestValidateBackupSpec(t *testing.T) {
	stores := Stores{DefaultStoreName: (store.Store)(nil), "archive": (store.Store)(nil)}
	cases := []struct {
		name        string
		spec        backupv1.BackupSpec
		wantReason  string
		wantMessage []string
	}{
		{name: "accepts a selector by labels on the default store", spec: backupv1.BackupSpec{
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "shop"}}}},
		{name: "accepts an empty selector on a named store", spec: backupv1.BackupSpec{StoreRef: &backupv1.StoreReference{Name: "archive"}}},
		{name: "refuses a label value with a space, naming the field", spec: backupv1.BackupSpec{
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "bad value!"}}},
			wantReason: backupv1.ReasonInvalidSelector, wantMessage: []string{"spec.selector.matchLabels", "bad value!"}},
		{name: "refuses a label key that is not a qualified name", spec: backupv1.BackupSpec{
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"a b": "x"}}},
			wantReason: backupv1.ReasonInvalidSelector, wantMessage: []string{"spec.selector.matchLabels", "a b"}},
		{name: "refuses an unknown operator, naming the expression", spec: backupv1.BackupSpec{
			Selector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Foo", Values: []string{"x"}}}}},
			wantReason: backupv1.ReasonInvalidSelector, wantMessage: []string{"spec.selector.matchExpressions[0].operator", "Foo"}},
		{name: "refuses a bad value in an expression", spec: backupv1.BackupSpec{
			Selector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"ok", "not ok"}}}}},
			wantReason: backupv1.ReasonInvalidSelector, wantMessage: []string{"spec.selector.matchExpressions[0].values[1]", "not ok"}},
		{name: "refuses a store the operator does not have, listing those it has", spec: backupv1.BackupSpec{StoreRef: &backupv1.StoreReference{Name: "s3"}},
			wantReason: backupv1.ReasonStoreNotConfigured, wantMessage: []string{"spec.storeRef.name", `"s3"`, "archive, default"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := &backupv1.Backup{Spec: c.spec}
			p := validateBackupSpec(b, stores)
			if c.wantReason == "" {
				if p != nil {
					t.Fatalf("problem %+v, want none", p)
				}
				return
			}
			if p == nil || p.reason != c.wantReason {
				t.Fatalf("problem %+v, want reason %s", p, c.wantReason)
			}
			for _, w := range c.wantMessage {
				if !strings.Contains(p.message, w) {
					t.Errorf("message %q does not say %q", p.message, w)
				}
			}
		})
	}
}
