// Package jobs stores scheduled jobs and runs them: a job store with an
// atomic compare-and-swap (the job-store adapter of the Chronis scheduler,
// in Go), in memory ([NewMemoryStore]) and in the duradyn DynamoDB table
// ([NewDynamoStore]), and a [Scheduler] that fires each job's scheduled
// times exactly once across any number of processes sharing a store.
//
// A job is a plain record ([Job]). Its fields and their JSON names are the
// guide's, so a job reads the same in Go and in a Chronis deployment. Stores
// validate every job and every change before they write anything: a job
// with an unknown status or misfire policy, a time that is not UTC or a
// metadata value that is not a string is refused with an error wrapping
// [ErrInvalidJob], and nothing is written.
package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Status is where a job stands in its life.
type Status string

// The statuses of a job.
const (
	// StatusPending: created, not yet given a next run time.
	StatusPending Status = "pending"
	// StatusScheduled: waiting for its next run time.
	StatusScheduled Status = "scheduled"
	// StatusRunning: a scheduler claimed a scheduled time and runs it.
	StatusRunning Status = "running"
	// StatusPaused: not run until resumed.
	StatusPaused Status = "paused"
	// StatusFailed: its last run failed and it is not scheduled again.
	StatusFailed Status = "failed"
)

// IfMissed is what a scheduler does with scheduled times it missed by more
// than the job's misfire threshold (after an outage, say).
type IfMissed string

// The misfire policies.
const (
	// Skip runs none of the missed times and schedules the next future
	// one.
	Skip IfMissed = "skip"
	// RunOnce runs once for all the missed times, then schedules the next
	// future one.
	RunOnce IfMissed = "run_once"
	// RunAll runs each missed time, oldest first.
	RunAll IfMissed = "run_all"
)

// Job is a scheduled job. Times are UTC (a store refuses others); a nil
// time is absent. Stores keep times to the millisecond, truncated, and
// accept those from 1970-01-01T00:00:00Z up to the end of year 9999: a job
// reads back equal to the job written once its times are truncated so.
// Empty metadata and trigger arguments read back as nil.
type Job struct {
	// ID identifies the job in its store. Required; any non-empty valid
	// UTF-8 string of at most [MaxIDBytes] bytes.
	ID string `json:"job_id"`
	// Status is where the job stands.
	Status Status `json:"status"`
	// NextRunTime is the next time the job is due; nil when it has none
	// (pending, paused, failed or finished).
	NextRunTime *time.Time `json:"next_run_time"`
	// IfMissed is the misfire policy. Default (empty) [Skip] on create.
	IfMissed IfMissed `json:"if_missed"`
	// MisfireThresholdSeconds is how late a scheduled time may run before
	// it counts as missed. Not negative.
	MisfireThresholdSeconds int `json:"misfire_threshold_seconds"`
	// LastRunTime is when the job last ran.
	LastRunTime *time.Time `json:"last_run_time"`
	// LastScheduledTime is the scheduled time the last run was for.
	LastScheduledTime *time.Time `json:"last_scheduled_time"`
	// Metadata holds string values for the application (a tenant, say);
	// queries filter on them by equality.
	Metadata map[string]string `json:"metadata,omitempty"`
	// Name is a label for people.
	Name string `json:"name,omitempty"`
	// TriggerType names the trigger: "cron", "interval" or "date" for the
	// [Scheduler]; stores keep any string.
	TriggerType string `json:"trigger_type,omitempty"`
	// TriggerArgs are the trigger's arguments as JSON (an object).
	TriggerArgs json.RawMessage `json:"trigger_args,omitempty"`
}

// Field names a job field in [Changes] and [Store.CompareAndSwap]: its JSON
// name.
type Field string

// The fields of a job that changes and comparisons may name. The job id
// cannot change.
const (
	FieldStatus                  Field = "status"
	FieldNextRunTime             Field = "next_run_time"
	FieldIfMissed                Field = "if_missed"
	FieldMisfireThresholdSeconds Field = "misfire_threshold_seconds"
	FieldLastRunTime             Field = "last_run_time"
	FieldLastScheduledTime       Field = "last_scheduled_time"
	FieldMetadata                Field = "metadata"
	FieldName                    Field = "name"
	FieldTriggerType             Field = "trigger_type"
	FieldTriggerArgs             Field = "trigger_args"
)

// Changes sets fields of a job, or, in [Store.CompareAndSwap]'s expected
// argument, the values they must hold. The value's Go type follows the
// field:
//
//   - status: [Status]
//   - next_run_time, last_run_time, last_scheduled_time: [time.Time] (UTC),
//     or nil for absent
//   - if_missed: [IfMissed]
//   - misfire_threshold_seconds: int
//   - metadata: map[string]string (replaces the whole map), or nil
//   - name, trigger_type: string
//   - trigger_args: [json.RawMessage], or nil
//
// Any other field or type is refused with [ErrInvalidJob].
type Changes map[Field]any

// Filter selects jobs in [Store.Query] and [Store.Count]. The zero Filter
// selects every job. Conditions combine with AND.
type Filter struct {
	// Status, when not empty, keeps jobs whose status is one of these.
	Status []Status
	// NextRunTimeLTE, when not nil, keeps jobs with a next run time at or
	// before it (jobs without one are left out).
	NextRunTimeLTE *time.Time
	// Metadata keeps jobs whose metadata holds every one of these keys
	// with the value given.
	Metadata map[string]string
	// Limit is the most jobs Query returns; 0 means no limit. Count ignores
	// it.
	Limit int
	// Offset skips this many matching jobs first; past the end Query
	// returns none. Count ignores it.
	Offset int
}

// Store holds jobs. Implementations are safe for concurrent use, across
// goroutines and (for the DynamoDB store) across processes.
type Store interface {
	// Create stores a new job. It fails with an error wrapping
	// [ErrJobExists] when one with the same id exists. On create an empty
	// IfMissed becomes [Skip] and an empty Status [StatusPending] (or
	// [StatusScheduled] when NextRunTime is set).
	Create(ctx context.Context, job Job) (Job, error)
	// Get returns the job with id, or an error wrapping [ErrJobNotFound].
	Get(ctx context.Context, id string) (Job, error)
	// Update applies changes to the job with id and returns the job as
	// updated, or an error wrapping [ErrJobNotFound].
	Update(ctx context.Context, id string, changes Changes) (Job, error)
	// Delete removes the job with id and reports whether it existed.
	Delete(ctx context.Context, id string) (bool, error)
	// Query returns the jobs that match filter, ordered by next run time
	// (jobs without one last), then id.
	Query(ctx context.Context, filter Filter) ([]Job, error)
	// CompareAndSwap applies changes to the job with id only if each
	// field named in expected holds the value given there, atomically. It
	// reports whether it applied and returns the job as it is afterwards
	// (changed or not), or an error wrapping [ErrJobNotFound].
	CompareAndSwap(ctx context.Context, id string, expected, changes Changes) (bool, Job, error)
	// Count returns how many jobs match filter (Limit and Offset ignored).
	Count(ctx context.Context, filter Filter) (int, error)
}

// Errors of the stores and the scheduler. Match them with [errors.Is].
var (
	// ErrJobNotFound reports a job id the store does not hold.
	ErrJobNotFound = errors.New("jobs: job not found")
	// ErrJobExists reports a create with an id the store holds already.
	ErrJobExists = errors.New("jobs: job exists")
	// ErrInvalidJob reports a job, change or filter the contract forbids
	// (an unknown status or misfire policy, a time that is not UTC, a
	// negative threshold, an unknown field, a value of the wrong type, a
	// metadata value that is not a string, an empty id). Nothing was
	// written.
	ErrInvalidJob = errors.New("jobs: invalid job")
)
