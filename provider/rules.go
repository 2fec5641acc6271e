package provider

import (
	"cmp"
	"encoding/json"
	"iter"
	"maps"
	"slices"
	"time"
	"unicode/utf8"
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
	if err := ValidateInstanceID(op, item.TargetInstance()); err != nil {
		return Permanent(op, ErrInvalidInput, "%s work item: %v", item.Kind(), err)
	}
	return nil
}

// ValidateInstanceID checks an instance id: not empty, and valid UTF-8. A
// store that keeps ids as strings (DynamoDB, JSON) would otherwise replace
// the invalid bytes, and two different ids would name one instance.
func ValidateInstanceID(op, id string) error {
	switch {
	case id == "":
		return Permanent(op, ErrInvalidInput, "empty instance id")
	case !utf8.ValidString(id):
		return Permanent(op, ErrInvalidInput, "instance id %q is not valid UTF-8", id)
	}
	return nil
}

// ValidateWorkerItem checks that item may go on the worker queue.
func ValidateWorkerItem(op string, item ActivityExecuteItem) error {
	if err := ValidateInstanceID(op, item.Instance); err != nil {
		return Permanent(op, ErrInvalidInput, "ActivityExecute work item: %v", err)
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

// StartFromMessages returns the orchestration name and version of the first
// [StartOrchestrationItem] or [ContinueAsNewItem] in msgs, the messages of
// an instance's first turn: they name the orchestration of an instance that
// has no instance record yet. A message without a version yields
// [UnknownVersion]. ok is false when msgs holds neither kind.
func StartFromMessages(msgs []WorkItem) (name, version string, ok bool) {
	for _, w := range msgs {
		var v *string
		switch it := w.(type) {
		case StartOrchestrationItem:
			name, v = it.Orchestration, it.Version
		case ContinueAsNewItem:
			name, v = it.Orchestration, it.Version
		default:
			continue
		}
		if v == nil {
			return name, UnknownVersion, true
		}
		return name, *v, true
	}
	return "", "", false
}

// StartedIn returns the orchestration name and version of the first
// [OrchestrationStarted] in events: history stored without an instance
// record (by [Provider.AppendWithExecution]) names its orchestration this
// way. ok is false when events holds none.
func StartedIn(events []Event) (name, version string, ok bool) {
	for _, e := range events {
		if s, isStart := e.Kind.(OrchestrationStarted); isStart {
			return s.Name, s.Version, true
		}
	}
	return "", "", false
}

// OnlyQueueMessages reports whether every message of msgs is a
// [QueueMessageItem]. A fetch drops such a batch when its instance does not
// exist and nothing names its orchestration: the messages are orphans no
// turn can consume. A batch holding anything else is left in place, since
// its start may still arrive.
func OnlyQueueMessages(msgs []WorkItem) bool {
	for _, w := range msgs {
		if w == nil || w.Kind() != KindQueueMessage {
			return false
		}
	}
	return true
}

// ExecutionSummary is what [ExecutionsToPrune] needs to know of one
// execution.
type ExecutionSummary struct {
	// ID is the execution id.
	ID uint64
	// Status is the execution's status, such as [StatusRunning].
	Status string
	// CompletedAtMs is when the execution completed, in epoch
	// milliseconds; nil while it runs.
	CompletedAtMs *int64
}

// ExecutionsToPrune returns the ids, ascending, of the executions in execs
// that [Admin.PruneExecutions] deletes: never current, never a running
// one, never one of the options.KeepLast highest ids in execs and, when
// options.CompletedBefore is set, only those that completed strictly before
// it. execs holds distinct ids in any order; it is not modified.
func ExecutionsToPrune(execs []ExecutionSummary, current uint64, options PruneOptions) []uint64 {
	sorted := slices.SortedFunc(slices.Values(execs), func(a, b ExecutionSummary) int { return cmp.Compare(a.ID, b.ID) })
	keepFrom := len(sorted)
	if options.KeepLast > 0 {
		keepFrom = max(0, len(sorted)-int(options.KeepLast))
	}
	var out []uint64
	for i, e := range sorted {
		switch {
		case e.ID == current, e.Status == StatusRunning, i >= keepFrom:
			continue
		case !options.CompletedBefore.IsZero() && (e.CompletedAtMs == nil || *e.CompletedAtMs >= options.CompletedBefore.UnixMilli()):
			continue
		}
		out = append(out, e.ID)
	}
	return out
}

// DecodeStoredEvent decodes one stored history event (the JSON encoding of
// an [Event]) found at position in execution executionID of instance. A
// failure is a [Corrupt] error of op.
func DecodeStoredEvent(op, instance string, executionID uint64, position int, data []byte) (Event, error) {
	var e Event
	if err := e.UnmarshalJSON(data); err != nil {
		return Event{}, Corrupt(op, err, "failed to deserialize history event at position %d for instance %q execution %d: %v",
			position, instance, executionID, err)
	}
	return e, nil
}

// CountEvent adds one stored event of instance's current execution to s,
// for [Provider.InstanceStats]: one event, its encoded length and, for the
// OrchestrationStarted (event id [InitialEventID]), the carry-forward
// events it holds. A started event that cannot be decoded is a [Corrupt]
// error of op.
func (s *SystemStats) CountEvent(op, instance string, eventID uint64, data []byte) error {
	s.HistoryEventCount++
	s.HistorySizeBytes += uint64(len(data))
	if eventID != InitialEventID {
		return nil
	}
	var started Event
	if err := json.Unmarshal(data, &started); err != nil {
		return Corrupt(op, err, "failed to deserialize OrchestrationStarted event of instance %q: %v", instance, err)
	}
	if k, ok := started.Kind.(OrchestrationStarted); ok {
		s.QueuePendingCount = uint64(len(k.CarryForwardEvents))
	}
	return nil
}

// CountKV adds the live KV entries of an instance (store and delta merged,
// see [MergeKV]) to s, for [Provider.InstanceStats].
func (s *SystemStats) CountKV(live map[string]KVEntry) {
	for _, e := range live {
		s.KVUserKeyCount++
		s.KVTotalValueBytes += uint64(len(e.Value))
	}
}

// CountInstance adds one instance whose current execution has status to m,
// for [Admin.SystemMetrics]: to the total and to the count of its status.
func (m *SystemMetrics) CountInstance(status string) {
	m.TotalInstances++
	switch status {
	case StatusRunning:
		m.RunningInstances++
	case StatusCompleted:
		m.CompletedInstances++
	case StatusFailed:
		m.FailedInstances++
	}
}

// LatestExecution returns the highest of the execution ids an instance has
// records for, or [InitialExecutionID] when it has none: the execution that
// [Provider.Read] and [Admin.LatestExecutionID] report.
func LatestExecution(ids iter.Seq[uint64]) uint64 {
	latest := InitialExecutionID
	for id := range ids {
		latest = max(latest, id)
	}
	return latest
}
