package jobs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// The trigger types a [Scheduler] knows, the values of [Job.TriggerType].
const (
	// TriggerCron fires at the times a cron expression names; its
	// arguments are [CronArgs].
	TriggerCron = "cron"
	// TriggerInterval fires at a fixed period from a start time; its
	// arguments are [IntervalArgs].
	TriggerInterval = "interval"
	// TriggerDate fires once, at a given time; its arguments are
	// [DateArgs].
	TriggerDate = "date"
)

// Trigger computes a job's scheduled times from its trigger type and
// arguments. Every time a trigger returns is UTC and a whole number of
// milliseconds, so it is stored exactly as computed, and every scheduler
// computes the same times for the same job.
type Trigger interface {
	// Next returns the first scheduled time strictly after t, and false
	// when there is none (a date trigger after its date, or a time a
	// store cannot hold).
	Next(t time.Time) (time.Time, bool)
	// first returns the first scheduled time of a job added, or resumed,
	// at now.
	first(now time.Time) (time.Time, bool)
}

// TriggerArgs are the arguments of one trigger type: [CronArgs],
// [IntervalArgs] or [DateArgs]. [SetTrigger] stores them in a job.
type TriggerArgs interface {
	// TriggerType returns the trigger type the arguments are for.
	TriggerType() string
}

// ParseTrigger returns the trigger of a job's trigger type and arguments.
// An unknown type, arguments that are not the type's JSON object (unknown
// fields included), or values the type refuses (see [CronArgs],
// [IntervalArgs], [DateArgs]) fail with an error wrapping [ErrInvalidJob].
func ParseTrigger(triggerType string, args json.RawMessage) (Trigger, error) {
	switch triggerType {
	case TriggerCron:
		var a CronArgs
		if err := decodeArgs(triggerType, args, &a); err != nil {
			return nil, err
		}
		return a.trigger()
	case TriggerInterval:
		var a IntervalArgs
		if err := decodeArgs(triggerType, args, &a); err != nil {
			return nil, err
		}
		return a.trigger()
	case TriggerDate:
		var a DateArgs
		if err := decodeArgs(triggerType, args, &a); err != nil {
			return nil, err
		}
		return a.trigger()
	}
	return nil, invalid(string(FieldTriggerType), triggerType, `unknown trigger type; want "cron", "interval" or "date"`)
}

// SetTrigger sets job's TriggerType and TriggerArgs to args, which it
// checks as [ParseTrigger] does; on an error wrapping [ErrInvalidJob] job is
// left unchanged.
func SetTrigger(job *Job, args TriggerArgs) error {
	raw, err := json.Marshal(args)
	if err != nil {
		return fmt.Errorf("%w: %s trigger arguments: %w", ErrInvalidJob, args.TriggerType(), err)
	}
	if _, err := ParseTrigger(args.TriggerType(), raw); err != nil {
		return err
	}
	job.TriggerType, job.TriggerArgs = args.TriggerType(), raw
	return nil
}

// decodeArgs decodes the JSON object args into dst, refusing unknown fields
// and anything after the object.
func decodeArgs(triggerType string, args json.RawMessage, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return invalid(string(FieldTriggerArgs), string(args), fmt.Sprintf("not %s trigger arguments: %v", triggerType, err))
	}
	if dec.More() {
		return invalid(string(FieldTriggerArgs), string(args), "data after the JSON object")
	}
	return nil
}

// storable reports whether t is a scheduled time a store can hold.
func storable(t time.Time) bool {
	return !t.Before(minTime) && t.Before(maxTime)
}
