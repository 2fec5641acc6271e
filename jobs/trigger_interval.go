package jobs

import (
	"time"
)

// maxEverySeconds is the longest period of an interval trigger: 100 years.
const maxEverySeconds = 100 * 366 * 24 * 60 * 60

// IntervalArgs are the arguments of a [TriggerInterval] trigger, as JSON
// {"every_seconds": 300, "start": "2025-01-01T00:00:00Z"}. The trigger
// fires at Start, Start + every, Start + 2·every, and so on.
type IntervalArgs struct {
	// EverySeconds is the period in seconds. Required; 1 to 100 years
	// (3,162,240,000).
	EverySeconds int64 `json:"every_seconds"`
	// Start is the first scheduled time (RFC 3339, any zone, kept to the
	// millisecond). Optional: when absent, [Scheduler.Add] sets it to the
	// time of the add plus one period and stores it in the job's
	// arguments, so that every scheduler computes the same times. A job
	// stored without one counts its periods from the Unix epoch.
	Start *time.Time `json:"start,omitempty"`
}

// TriggerType returns [TriggerInterval].
func (IntervalArgs) TriggerType() string { return TriggerInterval }

// trigger checks a and returns its trigger.
func (a IntervalArgs) trigger() (Trigger, error) {
	if a.EverySeconds <= 0 || a.EverySeconds > maxEverySeconds {
		return nil, invalid("interval every_seconds", a.EverySeconds, "outside 1 to 100 years")
	}
	t := intervalTrigger{everyMs: a.EverySeconds * 1000}
	if a.Start != nil {
		start := a.Start.UTC().Truncate(time.Millisecond)
		if !storable(start) {
			return nil, invalid("interval start", a.Start.Format(time.RFC3339Nano), "outside the years 1970 to 9999")
		}
		t.startMs = start.UnixMilli()
	}
	return t, nil
}

// intervalTrigger fires every everyMs milliseconds from startMs.
type intervalTrigger struct {
	startMs int64
	everyMs int64
}

// Next implements [Trigger].
func (iv intervalTrigger) Next(t time.Time) (time.Time, bool) {
	if t.Before(minTime) {
		return fromMillis(iv.startMs), true
	}
	ms := t.UnixMilli() // toward the past: t ≥ 1970
	next := iv.startMs
	if ms >= iv.startMs {
		next = iv.startMs + ((ms-iv.startMs)/iv.everyMs+1)*iv.everyMs
	}
	at := fromMillis(next)
	return at, storable(at)
}

func (iv intervalTrigger) first(now time.Time) (time.Time, bool) {
	return iv.Next(now.Add(-time.Millisecond))
}
