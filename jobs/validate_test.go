package jobs_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/duradyn/duradyn/jobs"
	"github.com/duradyn/duradyn/jobs/jobstest"
)

func TestDecodeJob(t *testing.T) {
	next := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	job, err := jobs.DecodeJob([]byte(`{
		"job_id": "j", "status": "scheduled", "next_run_time": "2030-01-02T03:04:05Z",
		"if_missed": "run_all", "misfire_threshold_seconds": 5, "last_run_time": null,
		"metadata": {"tenant": "acme", "empty": ""}, "name": "n",
		"trigger_type": "cron", "trigger_args": {"expr":"* * * * *"}}`))
	if err != nil {
		t.Fatalf("DecodeJob: %v", err)
	}
	want := jobs.Job{
		ID: "j", Status: jobs.StatusScheduled, NextRunTime: &next, IfMissed: jobs.RunAll,
		MisfireThresholdSeconds: 5, Metadata: map[string]string{"tenant": "acme", "empty": ""},
		Name: "n", TriggerType: "cron", TriggerArgs: json.RawMessage(`{"expr":"* * * * *"}`),
	}
	if !jobstest.Equal(job, want) {
		t.Fatalf("DecodeJob = %+v, want %+v", job, want)
	}
	// A job encodes to JSON and decodes back the same.
	data, err := json.Marshal(want)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	if back, err := jobs.DecodeJob(data); err != nil || !jobstest.Equal(back, want) {
		t.Fatalf("DecodeJob(Marshal(job)) = %+v, %v", back, err)
	}
}

func TestDecodeJob_Invalid(t *testing.T) {
	for _, c := range []struct {
		json string
		// mention is what the error must name.
		mention []string
	}{
		{`{"job_id":"j","metadata":{"retries":3}}`, []string{"metadata", "retries", "3"}},
		{`{"job_id":"j","metadata":{"flag":true}}`, []string{"metadata", "flag", "true"}},
		{`{"job_id":"j","metadata":{"n":null}}`, []string{"metadata", "n", "null"}},
		{`{"job_id":"j","metadata":{"o":{"a":"b"}}}`, []string{"metadata", "o"}},
		{`{"job_id":"j","metadata":["a"]}`, []string{"metadata"}},
		{`{"job_id":"j","status":"sleeping"}`, []string{"status", "sleeping"}},
		{`{"job_id":"j","if_missed":"sometimes"}`, []string{"if_missed", "sometimes"}},
		{`{"job_id":"j","misfire_threshold_seconds":-2}`, []string{"misfire_threshold_seconds", "-2"}},
		{`{"job_id":"j","misfire_threshold_seconds":"5"}`, []string{"misfire_threshold_seconds"}},
		{`{"job_id":"j","next_run_time":"2030-01-02T03:04:05+01:00"}`, []string{"next_run_time", "not UTC"}},
		{`{"job_id":"j","last_run_time":"1969-01-02T03:04:05Z"}`, []string{"last_run_time", "1969"}},
		{`{"job_id":"j","trigger_args":[1]}`, []string{"trigger_args", "[1]"}},
		{`{"job_id":""}`, []string{"job_id", "empty"}},
		{`{"status":"pending"}`, []string{"job_id", "empty"}},
		{`{"job_id":"j","colour":"red"}`, []string{"colour"}},
		{`{"job_id":"j"} {"job_id":"k"}`, []string{"after the job"}},
		{`{"job_id":`, []string{"JSON"}},
	} {
		_, err := jobs.DecodeJob([]byte(c.json))
		if !errors.Is(err, jobs.ErrInvalidJob) {
			t.Errorf("DecodeJob(%s): %v, want ErrInvalidJob", c.json, err)
			continue
		}
		for _, m := range c.mention {
			if !strings.Contains(err.Error(), m) {
				t.Errorf("DecodeJob(%s): %q does not mention %q", c.json, err, m)
			}
		}
	}
}

// Decoding a job as part of other JSON refuses metadata values that are
// not strings with ErrInvalidJob too, and ignores unknown fields.
func TestJob_UnmarshalJSON(t *testing.T) {
	var wrapped struct{ Job jobs.Job }
	err := json.Unmarshal([]byte(`{"Job":{"job_id":"j","metadata":{"n":1}}}`), &wrapped)
	if !errors.Is(err, jobs.ErrInvalidJob) {
		t.Fatalf("Unmarshal with a number in metadata: %v, want ErrInvalidJob", err)
	}
	err = json.Unmarshal([]byte(`{"Job":{"job_id":"j","extra":1,"metadata":{"n":"1"}}}`), &wrapped)
	if err != nil || wrapped.Job.ID != "j" || wrapped.Job.Metadata["n"] != "1" {
		t.Fatalf("Unmarshal = %+v, %v", wrapped.Job, err)
	}
}

// Errors name the field and the bad value.
func TestInvalidErrorsNameFieldAndValue(t *testing.T) {
	s := jobs.NewMemoryStore()
	ctx := t.Context()
	if _, err := s.Create(ctx, jobs.Job{ID: "j"}); err != nil {
		t.Fatalf("Create: %v", err)
	}
	cet := time.Date(2030, 1, 2, 3, 4, 5, 0, time.FixedZone("CET", 3600))
	for _, c := range []struct {
		err     func() error
		mention []string
	}{
		{func() error { _, err := s.Create(ctx, jobs.Job{ID: "k", Status: "zzz"}); return err }, []string{"status", "zzz"}},
		{func() error { _, err := s.Create(ctx, jobs.Job{ID: "k", NextRunTime: &cet}); return err }, []string{"next_run_time", "2030-01-02T03:04:05+01:00", "not UTC"}},
		{func() error { _, err := s.Update(ctx, "j", jobs.Changes{"colour": 1}); return err }, []string{"colour", "unknown field"}},
		{func() error {
			_, err := s.Update(ctx, "j", jobs.Changes{jobs.FieldStatus: "scheduled"})
			return err
		}, []string{"status", "scheduled", "jobs.Status"}},
		{func() error {
			_, _, err := s.CompareAndSwap(ctx, "j", jobs.Changes{jobs.FieldMisfireThresholdSeconds: -3}, nil)
			return err
		}, []string{"expected", "misfire_threshold_seconds", "-3"}},
		{func() error { _, err := s.Query(ctx, jobs.Filter{Offset: -4}); return err }, []string{"offset", "-4"}},
	} {
		err := c.err()
		if !errors.Is(err, jobs.ErrInvalidJob) {
			t.Errorf("error %v, want ErrInvalidJob", err)
			continue
		}
		for _, m := range c.mention {
			if !strings.Contains(err.Error(), m) {
				t.Errorf("%q does not mention %q", err, m)
			}
		}
	}
}
