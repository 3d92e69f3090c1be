package instrument

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestFinalizerAge(t *testing.T) {
	now := time.Date(2026, 11, 21, 5, 0, 0, 0, time.UTC)
	cm := func(name string, deletedAgo time.Duration, finalizers ...string) client.Object {
		o := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Finalizers: finalizers}}
		if deletedAgo > 0 {
			ts := metav1.NewTime(now.Add(-deletedAgo))
			o.DeletionTimestamp = &ts
		}
		return o
	}
	cases := []struct {
		name string
		objs []client.Object
		want float64
	}{
		{name: "is zero when nothing is being deleted", objs: []client.Object{cm("a", 0, "x/f")}, want: 0},
		{name: "is the age of the oldest object waiting on the finalizer",
			objs: []client.Object{cm("a", 40*time.Second, "x/f"), cm("b", 90*time.Second, "x/f")}, want: 90},
		{name: "ignores objects waiting on someone else's finalizer",
			objs: []client.Object{cm("a", 40*time.Second, "x/f"), cm("b", time.Hour, "other/f")}, want: 40},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			m, err := NewMetrics(reg)
			if err != nil {
				t.Fatal(err)
			}
			r := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(c.objs...).Build()
			fa, err := NewFinalizerAge(FinalizerAgeConfig{
				Controller: "cm", Finalizer: "x/f", Reader: r, Metrics: m,
				NewList: func() client.ObjectList { return &corev1.ConfigMapList{} },
				Clock:   clocktesting.NewFakePassiveClock(now),
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := fa.Measure(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := testutil.ToFloat64(m.finalizerOldest.WithLabelValues("cm", "x/f")); got != c.want {
				t.Errorf("gauge = %v, want %v", got, c.want)
			}
		})
	}
}

func TestNewFinalizerAgeNamesMissingParts(t *testing.T) {
	_, err := NewFinalizerAge(FinalizerAgeConfig{})
	if err == nil {
		t.Fatal("empty config accepted")
	}
	for _, part := range []string{"Controller", "Finalizer", "Reader", "NewList", "Metrics"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error %q does not name %s", err, part)
		}
	}
}
