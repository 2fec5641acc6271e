package jobs

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"
)

// MemoryStore is a [Store] in memory, for tests and for a scheduler in one
// process. It keeps copies: a job passed in or returned shares nothing with
// the store. Times are kept to the millisecond, as in every store. The zero
// value is not usable; call [NewMemoryStore].
type MemoryStore struct {
	mu   sync.Mutex
	jobs map[string]Job
}

// NewMemoryStore returns an empty [MemoryStore].
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{jobs: make(map[string]Job)}
}

var _ Store = (*MemoryStore)(nil)

// Create stores a new job; see [Store.Create].
func (s *MemoryStore) Create(ctx context.Context, job Job) (Job, error) {
	if err := ctx.Err(); err != nil {
		return Job{}, err
	}
	job, err := normalJob(job)
	if err != nil {
		return Job{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.jobs[job.ID]; ok {
		return Job{}, fmt.Errorf("%w: %q", ErrJobExists, job.ID)
	}
	s.jobs[job.ID] = job
	return copyJob(job), nil
}

// Get returns the job with id; see [Store.Get].
func (s *MemoryStore) Get(ctx context.Context, id string) (Job, error) {
	if err := ctx.Err(); err != nil {
		return Job{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	job, ok := s.jobs[id]
	if !ok {
		return Job{}, fmt.Errorf("%w: %q", ErrJobNotFound, id)
	}
	return copyJob(job), nil
}

// Update applies changes to the job with id; see [Store.Update].
func (s *MemoryStore) Update(ctx context.Context, id string, changes Changes) (Job, error) {
	if err := ctx.Err(); err != nil {
		return Job{}, err
	}
	changes, err := normalChanges("change", changes)
	if err != nil {
		return Job{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	job, ok := s.jobs[id]
	if !ok {
		return Job{}, fmt.Errorf("%w: %q", ErrJobNotFound, id)
	}
	job = applyChanges(job, changes)
	s.jobs[id] = job
	return copyJob(job), nil
}

// Delete removes the job with id; see [Store.Delete].
func (s *MemoryStore) Delete(ctx context.Context, id string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.jobs[id]
	delete(s.jobs, id)
	return ok, nil
}

// Query returns the jobs that match filter; see [Store.Query].
func (s *MemoryStore) Query(ctx context.Context, filter Filter) ([]Job, error) {
	matched, err := s.matching(ctx, filter)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(matched, compareJobs)
	if filter.Offset >= len(matched) {
		return []Job{}, nil
	}
	matched = matched[filter.Offset:]
	if filter.Limit > 0 && filter.Limit < len(matched) {
		matched = matched[:filter.Limit]
	}
	return matched, nil
}

// Count returns how many jobs match filter; see [Store.Count].
func (s *MemoryStore) Count(ctx context.Context, filter Filter) (int, error) {
	matched, err := s.matching(ctx, filter)
	return len(matched), err
}

// CompareAndSwap applies changes when expected holds; see
// [Store.CompareAndSwap].
func (s *MemoryStore) CompareAndSwap(ctx context.Context, id string, expected, changes Changes) (bool, Job, error) {
	if err := ctx.Err(); err != nil {
		return false, Job{}, err
	}
	expected, err := normalChanges("expected", expected)
	if err != nil {
		return false, Job{}, err
	}
	changes, err = normalChanges("change", changes)
	if err != nil {
		return false, Job{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	job, ok := s.jobs[id]
	if !ok {
		return false, Job{}, fmt.Errorf("%w: %q", ErrJobNotFound, id)
	}
	if !holds(job, expected) {
		return false, copyJob(job), nil
	}
	job = applyChanges(job, changes)
	s.jobs[id] = job
	return true, copyJob(job), nil
}

// matching returns copies of the jobs that match filter, in no order.
func (s *MemoryStore) matching(ctx context.Context, filter Filter) ([]Job, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	filter, err := normalFilter(filter)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	matched := []Job{}
	for _, job := range s.jobs {
		if matchesFilter(job, filter) {
			matched = append(matched, copyJob(job))
		}
	}
	return matched, nil
}

// applyChanges returns job with normalised changes applied. It shares the
// changes' metadata and trigger arguments, which normalChanges copied.
func applyChanges(job Job, changes Changes) Job {
	for field, value := range changes {
		switch field {
		case FieldStatus:
			job.Status = value.(Status)
		case FieldIfMissed:
			job.IfMissed = value.(IfMissed)
		case FieldMisfireThresholdSeconds:
			job.MisfireThresholdSeconds = value.(int)
		case FieldNextRunTime:
			job.NextRunTime = timeValue(value)
		case FieldLastRunTime:
			job.LastRunTime = timeValue(value)
		case FieldLastScheduledTime:
			job.LastScheduledTime = timeValue(value)
		case FieldMetadata:
			job.Metadata = value.(map[string]string)
		case FieldName:
			job.Name = value.(string)
		case FieldTriggerType:
			job.TriggerType = value.(string)
		case FieldTriggerArgs:
			job.TriggerArgs = value.(json.RawMessage)
		}
	}
	return job
}

// holds reports whether each field named in normalised expected values
// holds the value given there.
func holds(job Job, expected Changes) bool {
	for field, value := range expected {
		var ok bool
		switch field {
		case FieldStatus:
			ok = job.Status == value.(Status)
		case FieldIfMissed:
			ok = job.IfMissed == value.(IfMissed)
		case FieldMisfireThresholdSeconds:
			ok = job.MisfireThresholdSeconds == value.(int)
		case FieldNextRunTime:
			ok = sameTime(job.NextRunTime, timeValue(value))
		case FieldLastRunTime:
			ok = sameTime(job.LastRunTime, timeValue(value))
		case FieldLastScheduledTime:
			ok = sameTime(job.LastScheduledTime, timeValue(value))
		case FieldMetadata:
			ok = maps.Equal(job.Metadata, value.(map[string]string))
		case FieldName:
			ok = job.Name == value.(string)
		case FieldTriggerType:
			ok = job.TriggerType == value.(string)
		case FieldTriggerArgs:
			ok = bytes.Equal(job.TriggerArgs, value.(json.RawMessage))
		}
		if !ok {
			return false
		}
	}
	return true
}

// matchesFilter reports whether job matches a normalised filter (Limit and
// Offset aside).
func matchesFilter(job Job, filter Filter) bool {
	if len(filter.Status) > 0 && !slices.Contains(filter.Status, job.Status) {
		return false
	}
	if filter.NextRunTimeLTE != nil && (job.NextRunTime == nil || job.NextRunTime.After(*filter.NextRunTimeLTE)) {
		return false
	}
	for key, want := range filter.Metadata {
		if got, ok := job.Metadata[key]; !ok || got != want {
			return false
		}
	}
	return true
}

// compareJobs orders jobs by next run time, jobs without one last, then by
// id.
func compareJobs(a, b Job) int {
	switch {
	case a.NextRunTime == nil && b.NextRunTime != nil:
		return 1
	case a.NextRunTime != nil && b.NextRunTime == nil:
		return -1
	case a.NextRunTime != nil:
		if c := a.NextRunTime.Compare(*b.NextRunTime); c != 0 {
			return c
		}
	}
	return cmp.Compare(a.ID, b.ID)
}

// timeValue returns a normalised time change as a pointer, nil for nil.
func timeValue(value any) *time.Time {
	t, ok := value.(time.Time)
	if !ok {
		return nil
	}
	return &t
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}
