package provider

import (
	"maps"
	"time"
)

// This file holds the contract rules that every provider applies the same
// way, so that implementations share one definition of each.

// ValidateEvents checks events about to be appended to one execution: no
// nil kind, no event id 0, no id twice in the batch. It returns a permanent
// [*Error] for op wrapping [ErrInvalidInput].
func ValidateEvents(op string, events []Event) error {
	seen := make(map[uint64]bool, len(events))
	for i, e := range events {
		if e.Kind == nil {
			return Permanent(op, ErrInvalidInput, "event at index %d has no kind", i)
		}
		if e.EventID == 0 {
			return Permanent(op, ErrInvalidInput, "event_id must be greater than 0 (event at index %d, %s)", i, e.Kind.EventType())
		}
		if seen[e.EventID] {
			return Permanent(op, ErrInvalidInput, "event_id %d appears twice in one append", e.EventID)
		}
		seen[e.EventID] = true
	}
	return nil
}

// ValidateOrchestratorItem checks that item may go on the orchestrator
// queue: not nil, not an [ActivityExecuteItem], and with a target instance.
func ValidateOrchestratorItem(op string, item WorkItem) error {
	switch it := item.(type) {
	case nil:
		return Permanent(op, ErrInvalidInput, "Invalid work item type: nil work item")
	case ActivityExecuteItem:
		return Permanent(op, ErrInvalidInput, "Invalid work item type: ActivityExecute belongs on the worker queue")
	case ActivityFailedItem:
		if it.Details == nil {
			return Permanent(op, ErrInvalidInput, "ActivityFailed work item has no error details")
		}
	case SubOrchFailedItem:
		if it.Details == nil {
			return Permanent(op, ErrInvalidInput, "SubOrchFailed work item has no error details")
		}
	}
	if item.TargetInstance() == "" {
		return Permanent(op, ErrInvalidInput, "%s work item has an empty instance id", item.Kind())
	}
	return nil
}

// ValidateWorkerItem checks that item may go on the worker queue.
func ValidateWorkerItem(op string, item ActivityExecuteItem) error {
	if item.Instance == "" {
		return Permanent(op, ErrInvalidInput, "ActivityExecute work item has an empty instance id")
	}
	return nil
}

// ValidateCompletion checks the completion passed to
// [Provider.AckWorkItem]: nil (drop) or an [ActivityCompletedItem] or
// [ActivityFailedItem].
func ValidateCompletion(op string, completion WorkItem) error {
	switch completion.(type) {
	case nil:
		return nil
	case ActivityCompletedItem, ActivityFailedItem:
		return ValidateOrchestratorItem(op, completion)
	default:
		return Permanent(op, ErrInvalidInput, "Invalid completion work item type: %s (want ActivityCompleted or ActivityFailed)", completion.Kind())
	}
}

// ValidateTurn checks everything in commit that the contract forbids,
// before anything is written.
func ValidateTurn(op string, commit TurnCommit) error {
	if commit.ExecutionID == 0 {
		return Permanent(op, ErrInvalidInput, "execution_id must be greater than 0")
	}
	if err := ValidateEvents(op, commit.HistoryDelta); err != nil {
		return err
	}
	for _, item := range commit.WorkerItems {
		if err := ValidateWorkerItem(op, item); err != nil {
			return err
		}
	}
	for _, item := range commit.OrchestratorItems {
		if err := ValidateOrchestratorItem(op, item); err != nil {
			return err
		}
	}
	return nil
}

// TurnVisibleAt is when an orchestrator item enqueued by an ack becomes
// visible: a [TimerFiredItem] at its FireAtMs, everything else at now.
func TurnVisibleAt(item WorkItem, now time.Time) time.Time {
	if t, ok := item.(TimerFiredItem); ok {
		return time.UnixMilli(int64(t.FireAtMs))
	}
	return now
}

// CustomStatusChange scans a history delta for CustomStatusUpdated events.
// changed is false when there is none; otherwise status is the last one's
// value (nil when it cleared the status). An ack that changes the status
// bumps the version once, however many events it holds.
func CustomStatusChange(delta []Event) (status *string, changed bool) {
	for _, e := range delta {
		if k, ok := e.Kind.(CustomStatusUpdated); ok {
			status, changed = k.Status, true
		}
	}
	return status, changed
}

// KVDelta is the current execution's KV mutations, kept apart from the
// store (the state as of the last completed execution) so that a fetch can
// return the store alone as the replay snapshot.
type KVDelta struct {
	// ClearedAll reports a KeyValuesCleared in this execution: every store
	// key not set again since is hidden.
	ClearedAll bool
	// Entries holds keys set (non-nil) or cleared (nil, a tombstone) in this
	// execution.
	Entries map[string]*KVEntry
}

// Apply folds the KV events of a history delta into d, in order.
func (d *KVDelta) Apply(delta []Event) {
	for _, e := range delta {
		switch k := e.Kind.(type) {
		case KeyValueSet:
			d.set(k.Key, &KVEntry{Value: k.Value, LastUpdatedAtMs: k.LastUpdatedAtMs})
		case KeyValueCleared:
			d.set(k.Key, nil)
		case KeyValuesCleared:
			d.ClearedAll = true
			clear(d.Entries)
		}
	}
}

func (d *KVDelta) set(key string, entry *KVEntry) {
	if d.Entries == nil {
		d.Entries = map[string]*KVEntry{}
	}
	d.Entries[key] = entry
}

// HasKVEvents reports whether delta holds any KV event.
func HasKVEvents(delta []Event) bool {
	for _, e := range delta {
		switch e.Kind.(type) {
		case KeyValueSet, KeyValueCleared, KeyValuesCleared:
			return true
		}
	}
	return false
}

// MergeKV returns the live KV view: store overlaid by delta. The result is
// a new map; store is not modified. A terminal ack makes the result the new
// store and empties the delta.
func MergeKV(store map[string]KVEntry, delta KVDelta) map[string]KVEntry {
	out := make(map[string]KVEntry, len(store)+len(delta.Entries))
	if !delta.ClearedAll {
		maps.Copy(out, store)
	}
	for key, entry := range delta.Entries {
		if entry == nil {
			delete(out, key)
		} else {
			out[key] = *entry
		}
	}
	return out
}
