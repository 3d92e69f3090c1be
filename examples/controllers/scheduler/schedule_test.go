package scheduler

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	batchv1ex "github.com/loopwatch/loopwatch/examples/controllers/scheduler/api/v1"
)

func TestNextSchedule(t *testing.T) {
	created := time.Date(2026, 1, 1, 10, 0, 30, 0, time.UTC)
	cases := []struct {
		name                 string
		schedule             string
		lastScheduled        *time.Time
		deadline             *int64
		now                  time.Time
		wantMissed, wantNext time.Time
		wantErr              bool
	}{
		{name: "waits for the first run after creation", schedule: "* * * * *", now: created.Add(10 * time.Second),
			wantNext: time.Date(2026, 1, 1, 10, 1, 0, 0, time.UTC)},
		{name: "reports the run that is due", schedule: "* * * * *", now: time.Date(2026, 1, 1, 10, 1, 2, 0, time.UTC),
			wantMissed: time.Date(2026, 1, 1, 10, 1, 0, 0, time.UTC), wantNext: time.Date(2026, 1, 1, 10, 2, 0, 0, time.UTC)},
		{name: "reports only the latest of several missed runs", schedule: "* * * * *", now: time.Date(2026, 1, 1, 10, 5, 30, 0, time.UTC),
			wantMissed: time.Date(2026, 1, 1, 10, 5, 0, 0, time.UTC), wantNext: time.Date(2026, 1, 1, 10, 6, 0, 0, time.UTC)},
		{name: "reports nothing once the run is scheduled", schedule: "* * * * *", lastScheduled: ptr.To(time.Date(2026, 1, 1, 10, 1, 0, 0, time.UTC)),
			now: time.Date(2026, 1, 1, 10, 1, 2, 0, time.UTC), wantNext: time.Date(2026, 1, 1, 10, 2, 0, 0, time.UTC)},
		{name: "looks no further back than the starting deadline", schedule: "@hourly", deadline: ptr.To[int64](60),
			now: time.Date(2026, 1, 1, 12, 30, 0, 0, time.UTC), wantNext: time.Date(2026, 1, 1, 13, 0, 0, 0, time.UTC)},
		{name: "gives up on more than 100 missed runs", schedule: "* * * * *", now: created.Add(3 * time.Hour), wantErr: true},
		{name: "refuses a schedule that does not parse", schedule: "every minute", now: created, wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cj := &batchv1ex.CronJob{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.Time{Time: created}}}
			cj.Spec.Schedule, cj.Spec.StartingDeadlineSeconds = c.schedule, c.deadline
			if c.lastScheduled != nil {
				cj.Status.LastScheduleTime = &metav1.Time{Time: *c.lastScheduled}
			}
			missed, next, err := nextSchedule(cj, c.now)
			if (err != nil) != c.wantErr {
				t.Fatalf("err = %v, want error %v", err, c.wantErr)
			}
			if c.wantErr {
				return
			}
			if !missed.Equal(c.wantMissed) || !next.Equal(c.wantNext) {
				t.Errorf("missed, next = %s, %s; want %s, %s", missed, next, c.wantMissed, c.wantNext)
			}
		})
	}
}
