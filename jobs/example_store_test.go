package jobs_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/duradyn/duradyn/jobs"
)

// ExampleNewMemoryStore creates a job, claims its scheduled time with a
// compare-and-swap and lists the jobs that are due.
func ExampleNewMemoryStore() {
	ctx := context.Background()
	store := jobs.NewMemoryStore()
	next := time.Date(2030, 1, 1, 3, 0, 0, 0, time.UTC)
	job, err := store.Create(ctx, jobs.Job{
		ID:          "nightly-report",
		NextRunTime: &next,
		Metadata:    map[string]string{"tenant": "acme"},
		TriggerType: "cron",
		TriggerArgs: []byte(`{"expr":"0 3 * * *"}`),
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(job.ID, job.Status, job.IfMissed)

	due, err := store.Query(ctx, jobs.Filter{Status: []jobs.Status{jobs.StatusScheduled}, NextRunTimeLTE: &next})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("due:", len(due))

	applied, job, err := store.CompareAndSwap(ctx, "nightly-report",
		jobs.Changes{jobs.FieldStatus: jobs.StatusScheduled, jobs.FieldNextRunTime: next},
		jobs.Changes{jobs.FieldStatus: jobs.StatusRunning, jobs.FieldLastScheduledTime: next})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("claimed:", applied, job.Status)

	applied, _, err = store.CompareAndSwap(ctx, "nightly-report",
		jobs.Changes{jobs.FieldStatus: jobs.StatusScheduled, jobs.FieldNextRunTime: next},
		jobs.Changes{jobs.FieldStatus: jobs.StatusRunning, jobs.FieldLastScheduledTime: next})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("claimed again:", applied)
	// Output:
	// nightly-report scheduled skip
	// due: 1
	// claimed: true running
	// claimed again: false
}

// ExampleNewDynamoStore keeps jobs in the duradyn table. It needs a table,
// so it is compiled but not run.
func ExampleNewDynamoStore() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	store, err := jobs.NewDynamoStore(cfg, func(o *jobs.DynamoOptions) {
		o.TableName = "duradyn"
	})
	if err != nil {
		log.Fatal(err)
	}
	now := time.Now().UTC()
	due, err := store.Query(ctx, jobs.Filter{
		Status:         []jobs.Status{jobs.StatusScheduled},
		NextRunTimeLTE: &now,
		Limit:          10,
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, job := range due {
		fmt.Println(job.ID, job.NextRunTime)
	}
}

// ExampleDecodeJob reads a job from its JSON form, as a command line tool
// would before creating it.
func ExampleDecodeJob() {
	job, err := jobs.DecodeJob([]byte(`{"job_id":"report","next_run_time":"2030-01-01T03:00:00Z","metadata":{"tenant":"acme"}}`))
	fmt.Println(job.ID, job.NextRunTime.Format(time.RFC3339), job.Metadata["tenant"], err)

	_, err = jobs.DecodeJob([]byte(`{"job_id":"report","metadata":{"retries":3}}`))
	fmt.Println(err)
	// Output:
	// report 2030-01-01T03:00:00Z acme <nil>
	// jobs: invalid job: metadata "retries" "3": not a JSON string
}
