package scheduler

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func job(name string, started time.Time, finished batchv1.JobConditionType, scheduledAt string) batchv1.Job {
	j := batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{ScheduledTimeAnnotation: scheduledAt}}}
	j.Status.StartTime = &metav1.Time{Time: started}
	if finished != "" {
		j.Status.Conditions = []batchv1.JobCondition{{Type: finished, Status: corev1.ConditionTrue}}
	}
	return j
}

func TestClassifySortsJobsByStateAndFindsTheLatestRun(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	c := classify([]batchv1.Job{
		job("a", t0, batchv1.JobComplete, "2026-01-01T10:00:00Z"),
		job("b", t0.Add(time.Minute), batchv1.JobFailed, "2026-01-01T10:01:00Z"),
		job("c", t0.Add(2*time.Minute), "", "2026-01-01T10:02:00Z"),
		job("d", t0.Add(3*time.Minute), batchv1.JobComplete, "not a time"),
	})
	if len(c.active) != 1 || c.active[0].Name != "c" || len(c.failed) != 1 || len(c.successful) != 2 {
		t.Errorf("active %d, failed %d, successful %d; want c, b, a+d", len(c.active), len(c.failed), len(c.successful))
	}
	if c.mostRecent == nil || !c.mostRecent.Equal(t0.Add(2*time.Minute)) {
		t.Errorf("most recent run %v, want %s", c.mostRecent, t0.Add(2*time.Minute))
	}
}

func TestBeyondLimitReturnsTheOldestJobs(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	var jobs []*batchv1.Job
	for _, n := range []string{"c", "a", "d", "b"} {
		j := job(n, t0.Add(time.Duration(n[0]-'a')*time.Minute), batchv1.JobComplete, "")
		jobs = append(jobs, &j)
	}
	cases := []struct {
		name  string
		limit *int32
		want  []string
	}{
		{name: "keeps everything without a limit"},
		{name: "keeps everything within the limit", limit: ptr.To[int32](4)},
		{name: "returns the oldest beyond the limit", limit: ptr.To[int32](2), want: []string{"a", "b"}},
		{name: "returns all with a limit of zero", limit: ptr.To[int32](0), want: []string{"a", "b", "c", "d"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, j := range beyondLimit(append([]*batchv1.Job{}, jobs...), c.limit) {
				got = append(got, j.Name)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Fatalf("got %v, want %v", got, c.want)
				}
			}
		})
	}
}
