package jobs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// Stores keep times to the millisecond: a time read back from a store is the
// time written, truncated to the millisecond (toward the past), in UTC. The
// times a store accepts are UTC and lie in [1970-01-01T00:00:00Z,
// 10000-01-01T00:00:00Z).
var (
	minTime = time.Unix(0, 0).UTC()
	maxTime = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
)

// invalid returns an error wrapping [ErrInvalidJob] that names the field,
// the bad value and what is wrong with it.
func invalid(field string, value any, reason string) error {
	return fmt.Errorf("%w: %s %#v: %s", ErrInvalidJob, field, value, reason)
}

// normalJob checks a job as [Store.Create] receives it and returns it as a
// store keeps it: defaults filled in (IfMissed [Skip], Status
// [StatusPending], or [StatusScheduled] when NextRunTime is set), times
// truncated to the millisecond, empty metadata and trigger arguments made
// nil, and nothing shared with the caller's job.
func normalJob(job Job) (Job, error) {
	if err := checkID(job.ID); err != nil {
		return Job{}, err
	}
	if job.Status == "" {
		job.Status = StatusPending
		if job.NextRunTime != nil {
			job.Status = StatusScheduled
		}
	}
	if job.IfMissed == "" {
		job.IfMissed = Skip
	}
	if err := checkStatus(string(FieldStatus), job.Status); err != nil {
		return Job{}, err
	}
	if err := checkIfMissed(string(FieldIfMissed), job.IfMissed); err != nil {
		return Job{}, err
	}
	if err := checkThreshold(string(FieldMisfireThresholdSeconds), job.MisfireThresholdSeconds); err != nil {
		return Job{}, err
	}
	var err error
	if job.NextRunTime, err = normalTimePtr(string(FieldNextRunTime), job.NextRunTime); err != nil {
		return Job{}, err
	}
	if job.LastRunTime, err = normalTimePtr(string(FieldLastRunTime), job.LastRunTime); err != nil {
		return Job{}, err
	}
	if job.LastScheduledTime, err = normalTimePtr(string(FieldLastScheduledTime), job.LastScheduledTime); err != nil {
		return Job{}, err
	}
	if job.TriggerArgs, err = normalTriggerArgs(string(FieldTriggerArgs), job.TriggerArgs); err != nil {
		return Job{}, err
	}
	if err := checkText(string(FieldName), job.Name); err != nil {
		return Job{}, err
	}
	if err := checkText(string(FieldTriggerType), job.TriggerType); err != nil {
		return Job{}, err
	}
	if err := checkMetadata(string(FieldMetadata), job.Metadata); err != nil {
		return Job{}, err
	}
	job.Metadata = copyMetadata(job.Metadata)
	return job, nil
}

// normalChanges checks changes (or the expected values of
// [Store.CompareAndSwap], named by what) and returns them as a store applies
// them: times truncated to the millisecond, empty metadata and trigger
// arguments nil, and nothing shared with the caller's map.
func normalChanges(what string, changes Changes) (Changes, error) {
	out := make(Changes, len(changes))
	for _, field := range slices.Sorted(maps.Keys(changes)) {
		v, err := normalChange(what, field, changes[field])
		if err != nil {
			return nil, err
		}
		out[field] = v
	}
	return out, nil
}

// normalChange checks the value of one field of changes and returns it as
// a store applies it (see normalChanges).
func normalChange(what string, field Field, value any) (any, error) {
	name := what + " " + string(field)
	switch field {
	case FieldStatus:
		return checked(name, value, "want a jobs.Status", checkStatus)
	case FieldIfMissed:
		return checked(name, value, "want a jobs.IfMissed", checkIfMissed)
	case FieldMisfireThresholdSeconds:
		return checked(name, value, "want an int", checkThreshold)
	case FieldName, FieldTriggerType:
		return checked(name, value, "want a string", checkText)
	case FieldNextRunTime, FieldLastRunTime, FieldLastScheduledTime:
		if value == nil {
			return nil, nil
		}
		t, ok := value.(time.Time)
		if !ok {
			return nil, invalid(name, value, "want a time.Time or nil")
		}
		return asAny(normalTime(name, t))
	case FieldMetadata:
		if value == nil {
			return map[string]string(nil), nil
		}
		metadata, ok := value.(map[string]string)
		if !ok {
			return nil, invalid(name, value, "want a map[string]string or nil")
		}
		if err := checkMetadata(name, metadata); err != nil {
			return nil, err
		}
		return copyMetadata(metadata), nil
	case FieldTriggerArgs:
		if value == nil {
			return json.RawMessage(nil), nil
		}
		args, ok := value.(json.RawMessage)
		if !ok {
			return nil, invalid(name, value, "want a json.RawMessage or nil")
		}
		return asAny(normalTriggerArgs(name, args))
	}
	return nil, invalid(what+" field", string(field), "unknown field")
}

// checked returns value when it is a T that check accepts; want says what
// a value of another type should have been.
func checked[T any](name string, value any, want string, check func(string, T) error) (any, error) {
	v, ok := value.(T)
	if !ok {
		return nil, invalid(name, value, want)
	}
	if err := check(name, v); err != nil {
		return nil, err
	}
	return v, nil
}

// asAny is a normalizer's result as a change's value; nothing on error.
func asAny[T any](v T, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return v, nil
}

// normalFilter checks a filter and returns it with its time truncated to
// the millisecond.
func normalFilter(filter Filter) (Filter, error) {
	for _, status := range filter.Status {
		if err := checkStatus("filter status", status); err != nil {
			return Filter{}, err
		}
	}
	var err error
	if filter.NextRunTimeLTE, err = normalTimePtr("filter next_run_time", filter.NextRunTimeLTE); err != nil {
		return Filter{}, err
	}
	if filter.Limit < 0 {
		return Filter{}, invalid("filter limit", filter.Limit, "negative")
	}
	if filter.Offset < 0 {
		return Filter{}, invalid("filter offset", filter.Offset, "negative")
	}
	return filter, nil
}

// checkID checks that id can name a job in every store: not empty, valid
// UTF-8 and at most [MaxIDBytes] long.
func checkID(id string) error {
	switch {
	case id == "":
		return invalid("job_id", id, "empty")
	case len(id) > MaxIDBytes:
		return fmt.Errorf("%w: job_id of %d bytes: longer than %d bytes", ErrInvalidJob, len(id), MaxIDBytes)
	}
	return checkText("job_id", id)
}

// checkText checks that s is valid UTF-8, which DynamoDB strings must be.
func checkText(name, s string) error {
	if !utf8.ValidString(s) {
		return invalid(name, s, "not valid UTF-8")
	}
	return nil
}

func checkMetadata(name string, metadata map[string]string) error {
	for _, key := range slices.Sorted(maps.Keys(metadata)) {
		if err := checkText(name+" key", key); err != nil {
			return err
		}
		if err := checkText(name+" "+strconv.Quote(key), metadata[key]); err != nil {
			return err
		}
	}
	return nil
}

func checkStatus(name string, status Status) error {
	switch status {
	case StatusPending, StatusScheduled, StatusRunning, StatusPaused, StatusFailed:
		return nil
	}
	return invalid(name, string(status), "unknown status")
}

func checkIfMissed(name string, policy IfMissed) error {
	switch policy {
	case Skip, RunOnce, RunAll:
		return nil
	}
	return invalid(name, string(policy), "unknown misfire policy")
}

func checkThreshold(name string, seconds int) error {
	if seconds < 0 {
		return invalid(name, seconds, "negative")
	}
	return nil
}

// normalTime checks that t is UTC and in the range stores keep, and returns
// it truncated to the millisecond.
func normalTime(name string, t time.Time) (time.Time, error) {
	if t.Location() != time.UTC {
		return time.Time{}, fmt.Errorf("%w: %s %s: not UTC (location %q)", ErrInvalidJob, name, t.Format(time.RFC3339Nano), t.Location())
	}
	if t.Before(minTime) || !t.Before(maxTime) {
		return time.Time{}, fmt.Errorf("%w: %s %s: outside [%s, %s)", ErrInvalidJob, name, t.Format(time.RFC3339Nano), minTime.Format(time.RFC3339), maxTime.Format(time.RFC3339))
	}
	return fromMillis(t.UnixMilli()), nil
}

func normalTimePtr(name string, t *time.Time) (*time.Time, error) {
	if t == nil {
		return nil, nil
	}
	normal, err := normalTime(name, *t)
	if err != nil {
		return nil, err
	}
	return &normal, nil
}

// fromMillis returns the UTC time of epoch milliseconds ms.
func fromMillis(ms int64) time.Time {
	return time.UnixMilli(ms).UTC()
}

// normalTriggerArgs checks that args, when not empty, hold a JSON object,
// and returns a copy (nil when empty).
func normalTriggerArgs(name string, args json.RawMessage) (json.RawMessage, error) {
	if len(args) == 0 {
		return nil, nil
	}
	trimmed := bytes.TrimSpace(args)
	if !json.Valid(trimmed) || len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, invalid(name, string(args), "not a JSON object")
	}
	return bytes.Clone(args), nil
}

// copyMetadata returns a copy of metadata, nil when it is empty.
func copyMetadata(metadata map[string]string) map[string]string {
	if len(metadata) == 0 {
		return nil
	}
	return maps.Clone(metadata)
}

// copyJob returns a copy of job sharing nothing with it.
func copyJob(job Job) Job {
	job.NextRunTime = copyTime(job.NextRunTime)
	job.LastRunTime = copyTime(job.LastRunTime)
	job.LastScheduledTime = copyTime(job.LastScheduledTime)
	job.Metadata = copyMetadata(job.Metadata)
	if job.TriggerArgs != nil {
		job.TriggerArgs = bytes.Clone(job.TriggerArgs)
	}
	return job
}

func copyTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	c := *t
	return &c
}

// UnmarshalJSON decodes a job from its JSON form (the field names of
// [Job]'s tags). A metadata value that is not a JSON string, or a field of
// the wrong JSON type, fails with an error wrapping [ErrInvalidJob] that
// names it. Unknown fields are ignored; [DecodeJob] refuses them.
func (j *Job) UnmarshalJSON(data []byte) error {
	job, err := decodeJob(data, false)
	if err != nil {
		return err
	}
	*j = job
	return nil
}

// DecodeJob decodes one job from JSON, as [Job.UnmarshalJSON] does but
// refusing unknown fields and trailing data, and checks it as
// [Store.Create] would: an empty id, an unknown status or misfire policy, a
// negative threshold, a time that is not UTC (write times with a Z suffix)
// or out of range, trigger arguments that are not a JSON object or a
// metadata value that is not a string fail with an error wrapping
// [ErrInvalidJob]. It returns the job as decoded; a store fills in its
// defaults on create.
func DecodeJob(data []byte) (Job, error) {
	job, err := decodeJob(data, true)
	if err != nil {
		return Job{}, err
	}
	if _, err := normalJob(job); err != nil {
		return Job{}, err
	}
	return job, nil
}

func decodeJob(data []byte, strict bool) (Job, error) {
	type plainJob Job
	var raw struct {
		plainJob
		// Metadata shadows plainJob's so that each value can be checked.
		Metadata map[string]json.RawMessage `json:"metadata,omitempty"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(&raw); err != nil {
		return Job{}, fmt.Errorf("%w: decoding JSON: %w", ErrInvalidJob, err)
	}
	if _, err := dec.Token(); strict && err != io.EOF {
		return Job{}, fmt.Errorf("%w: decoding JSON: data after the job", ErrInvalidJob)
	}
	job := Job(raw.plainJob)
	job.Metadata = nil
	if raw.Metadata != nil {
		job.Metadata = make(map[string]string, len(raw.Metadata))
	}
	for key, value := range raw.Metadata {
		var s string
		if len(value) == 0 || value[0] != '"' || json.Unmarshal(value, &s) != nil {
			return Job{}, invalid("metadata "+strconv.Quote(key), string(value), "not a JSON string")
		}
		job.Metadata[key] = s
	}
	return job, nil
}
