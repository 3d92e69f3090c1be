package scheduler

import (
	"fmt"
	"time"

	"github.com/robfig/cron/v3"

	batchv1ex "github.com/loopwatch/loopwatch/examples/controllers/scheduler/api/v1"
)

// maxMissedRuns bounds how many missed runs nextSchedule walks through: more means a clock
// jump or a schedule far denser than the controller can follow.
const maxMissedRuns = 100

// nextSchedule returns the latest run that was due and not yet scheduled (zero if none) and the
// next run after now. Runs missed before the starting deadline are not looked at.
func nextSchedule(cronJob *batchv1ex.CronJob, now time.Time) (lastMissed, next time.Time, err error) {
	sched, err := cron.ParseStandard(cronJob.Spec.Schedule)
	if err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("unparseable schedule %q: %w", cronJob.Spec.Schedule, err)
	}
	earliest := cronJob.CreationTimestamp.Time
	if cronJob.Status.LastScheduleTime != nil {
		earliest = cronJob.Status.LastScheduleTime.Time
	}
	if d := cronJob.Spec.StartingDeadlineSeconds; d != nil {
		if limit := now.Add(-time.Duration(*d) * time.Second); limit.After(earliest) {
			earliest = limit
		}
	}
	if earliest.After(now) {
		return time.Time{}, sched.Next(now), nil
	}
	missed := 0
	for t := sched.Next(earliest); !t.After(now); t = sched.Next(t) {
		lastMissed = t
		if missed++; missed > maxMissedRuns {
			return time.Time{}, time.Time{}, fmt.Errorf("more than %d missed runs: set or decrease startingDeadlineSeconds, or check the clock", maxMissedRuns)
		}
	}
	return lastMissed, sched.Next(now), nil
}
