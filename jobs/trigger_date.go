package jobs

import "time"

// DateArgs are the arguments of a [TriggerDate] trigger, as JSON
// {"at": "2025-06-01T09:00:00+02:00"}: the job fires once.
type DateArgs struct {
	// At is the one scheduled time (RFC 3339, any zone, kept to the
	// millisecond). Required; in the years 1970 to 9999. A time already
	// past when the job is added or resumed is due at once, and the
	// job's misfire policy decides whether it runs.
	At time.Time `json:"at"`
}

// TriggerType returns [TriggerDate].
func (DateArgs) TriggerType() string { return TriggerDate }

// trigger checks a and returns its trigger.
func (a DateArgs) trigger() (Trigger, error) {
	if a.At.IsZero() {
		return nil, invalid("date at", "", "missing")
	}
	at := a.At.UTC().Truncate(time.Millisecond)
	if !storable(at) {
		return nil, invalid("date at", a.At.Format(time.RFC3339Nano), "outside the years 1970 to 9999")
	}
	return dateTrigger{at: at}, nil
}

// dateTrigger fires once, at at.
type dateTrigger struct {
	at time.Time
}

// Next implements [Trigger].
func (d dateTrigger) Next(t time.Time) (time.Time, bool) {
	if d.at.After(t) {
		return d.at, true
	}
	return time.Time{}, false
}

func (d dateTrigger) first(time.Time) (time.Time, bool) { return d.at, true }
