package jobs_test

import (
	"context"
	"fmt"
	"time"

	"github.com/duradyn/duradyn/jobs"
)

// A scheduler runs a job every five minutes; here a fake clock stands in
// for the passing of a quarter of an hour.
func ExampleScheduler() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clock := newFakeClock(time.Date(2025, 1, 1, 9, 0, 30, 0, time.UTC))
	s, err := jobs.NewScheduler(jobs.NewMemoryStore(), func(o *jobs.SchedulerOptions) { o.Clock = clock })
	if err != nil {
		fmt.Println(err)
		return
	}
	fired := make(chan jobs.Fire)
	err = s.Handle("report", func(ctx context.Context, f jobs.Fire) error {
		fired <- f
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	job := jobs.Job{ID: "quarter-hourly-report", Name: "report"}
	if err := jobs.SetTrigger(&job, jobs.CronArgs{Expr: "*/5 * * * *", Timezone: "Europe/Berlin"}); err != nil {
		fmt.Println(err)
		return
	}
	if job, err = s.Add(ctx, job); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("first run:", job.NextRunTime.Format(time.Kitchen))

	stopped := make(chan error)
	go func() { stopped <- s.Run(ctx) }()
	for m := 5; m <= 15; m += 5 {
		clock.Set(time.Date(2025, 1, 1, 9, m, 0, 0, time.UTC))
		f := <-fired
		fmt.Println("fired for", f.ScheduledTime.Format(time.Kitchen))
	}
	cancel()
	fmt.Println("stopped:", <-stopped)
	// Output:
	// first run: 9:05AM
	// fired for 9:05AM
	// fired for 9:10AM
	// fired for 9:15AM
	// stopped: <nil>
}

// The instance an action made by StartOrchestration starts for a scheduled
// time has an id a caller can compute, to wait for it or read its output.
func ExampleInstanceID() {
	at := time.Date(2025, 1, 2, 3, 0, 0, 0, time.UTC)
	fmt.Println(jobs.InstanceID("nightly-report", at))
	// Output: job:nightly-report:2025-01-02T03:00:00.000Z
}
