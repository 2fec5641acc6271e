package provider

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Limits and fixed values of the contract.
const (
	// InitialExecutionID is the id of an instance's first execution.
	InitialExecutionID uint64 = 1
	// InitialEventID is the id of every execution's OrchestrationStarted.
	InitialEventID uint64 = 1
	// MaxWorkerTags is the most tags a [TagFilter] may name.
	MaxWorkerTags = 5
	// UnknownVersion is the orchestration version reported when none is
	// stored.
	UnknownVersion = "unknown"
)

// Execution statuses stored by [ExecutionMetadata] and reported by the
// management methods.
const (
	StatusRunning        = "Running"
	StatusCompleted      = "Completed"
	StatusFailed         = "Failed"
	StatusContinuedAsNew = "ContinuedAsNew"
)

// IsTerminalStatus reports whether status ends an execution (Completed,
// Failed or ContinuedAsNew). A terminal ack merges the execution's KV delta
// into the instance's store.
func IsTerminalStatus(status string) bool {
	return status == StatusCompleted || status == StatusFailed || status == StatusContinuedAsNew
}

// OrchestrationItem is one locked turn of an instance: every visible message
// of the instance, with the current execution's history, returned by
// [Provider.FetchOrchestrationItem].
type OrchestrationItem struct {
	// Instance is the instance id.
	Instance string
	// OrchestrationName is the stored name, or the name from a queued start
	// or continue-as-new message on an instance's first turn.
	OrchestrationName string
	// ExecutionID is the current execution (1 on a first turn).
	ExecutionID uint64
	// Version is the orchestration version, or [UnknownVersion].
	Version string
	// History holds the current execution's events in event-id order. Empty
	// when HistoryError is set. Read-only: a provider may hand the same
	// events to later fetches of the instance (a cache of decoded history),
	// so callers copy what they change.
	History []Event
	// HistoryError is non-nil when the stored history could not be decoded.
	// The lock is still held and attempt counts were still incremented, so
	// the runtime can abandon, retry on a newer node, or poison the instance.
	HistoryError error
	// Messages is the locked batch, in queue order.
	Messages []WorkItem
	// KVSnapshot is the instance's KV state as of its last completed
	// execution; the current execution's own writes are not included.
	KVSnapshot map[string]KVEntry
	// LockToken identifies the lock for ack, abandon and renew.
	LockToken string
	// AttemptCount is the highest delivery count over Messages; 1 on a
	// first delivery.
	AttemptCount uint32
	// LeaseExpiry is when the lock's lease ends, counted from a clock
	// read taken before the request that won the lock was sent: a slow
	// claim leaves less of the lease, never more. Callers schedule
	// renewals and stop work from it, not from the time the fetch
	// returned. Zero when the provider does not report it.
	LeaseExpiry time.Time
}

// LockedWorkItem is an activity locked for one worker, returned by
// [Provider.FetchWorkItem].
type LockedWorkItem struct {
	// Item is the activity to run.
	Item ActivityExecuteItem
	// LockToken identifies the lock for ack, abandon and renew.
	LockToken string
	// AttemptCount is the delivery count of the item, 1 on first delivery.
	AttemptCount uint32
	// LeaseExpiry is when the lock's lease ends, as for
	// [OrchestrationItem.LeaseExpiry].
	LeaseExpiry time.Time
}

// TurnCommit is what an orchestration turn commits atomically through
// [Provider.AckOrchestrationItem].
type TurnCommit struct {
	// ExecutionID is the execution the history delta belongs to. An id
	// above the current one creates that execution (continue-as-new).
	ExecutionID uint64
	// HistoryDelta is appended to the execution's history as given.
	HistoryDelta []Event
	// WorkerItems are enqueued on the worker queue, visible now.
	WorkerItems []ActivityExecuteItem
	// OrchestratorItems are enqueued on the orchestrator queue for their
	// target instances; a [TimerFiredItem] becomes visible at its FireAtMs.
	OrchestratorItems []WorkItem
	// Metadata describes the execution; the provider stores it blindly.
	Metadata ExecutionMetadata
	// CancelledActivities are deleted from the worker queue after
	// WorkerItems are enqueued; unknown identities are ignored.
	CancelledActivities []ScheduledActivityIdentifier
	// CompletionWindow is a hint, not part of the commit: the execution
	// waits for many completions and would rather its next turn took
	// several of them at once than start for each. A provider may hold
	// back the instance's next turn in this process for up to this long
	// after the commit; zero asks for none. Providers that ignore it are
	// correct.
	CompletionWindow time.Duration
}

// ExecutionMetadata is what the runtime computed about an execution during
// a turn. Empty fields mean "no change".
type ExecutionMetadata struct {
	// Status, when set, is the execution's new status: one of
	// [StatusCompleted], [StatusFailed], [StatusContinuedAsNew] (or
	// [StatusRunning]). Setting it records Output and the completion time.
	Status string
	// Output is the result, failure message or continue-as-new input.
	Output *string
	// OrchestrationName and OrchestrationVersion are sent, both, on the
	// first turn of each execution. When both are set the instance record
	// is created if absent and its name and version are overwritten.
	OrchestrationName    string
	OrchestrationVersion string // see OrchestrationName
	// ParentInstanceID links a sub-orchestration to its parent. It is
	// stored only when the instance record is created.
	ParentInstanceID string
	// PinnedDuroxideVersion, when set, is stored on the execution
	// (overwriting any earlier value).
	PinnedDuroxideVersion *SemVer
}

// ScheduledActivityIdentifier names a worker-queue entry for cancellation.
type ScheduledActivityIdentifier struct {
	// Instance is the instance that scheduled the activity.
	Instance string
	// ExecutionID is the execution that scheduled it.
	ExecutionID uint64
	// ActivityID is the event id of its ActivityScheduled event (the
	// item's [ActivityExecuteItem.ID]).
	ActivityID uint64
}

// SessionFetchConfig lets [Provider.FetchWorkItem] return session-bound
// items: those of sessions OwnerID holds and of sessions nobody holds
// (claiming them for LockTimeout).
type SessionFetchConfig struct {
	// OwnerID identifies the session owner (a worker process or slot).
	OwnerID string
	// LockTimeout is the session lease granted on claim.
	LockTimeout time.Duration
}

// CustomStatus is an instance's custom status and its version, which grows
// by one for every ack that set or cleared it.
type CustomStatus struct {
	// Status is the current value; nil when cleared.
	Status *string
	// Version counts the acks that changed the status.
	Version uint64
}

// KVEntry is one value of an instance's KV store.
type KVEntry struct {
	// Value is the stored value; "" is a real value.
	Value string
	// LastUpdatedAtMs is when the key was last set, in epoch milliseconds
	// (from its [KeyValueSet] event).
	LastUpdatedAtMs uint64
}

// SystemStats describes the current execution of one instance.
type SystemStats struct {
	// HistoryEventCount is the number of events in the current execution.
	HistoryEventCount uint64 `json:"history_event_count"`
	// HistorySizeBytes is the summed length of their JSON encodings.
	HistorySizeBytes uint64 `json:"history_size_bytes"`
	// QueuePendingCount is the number of carry-forward events the
	// execution started with.
	QueuePendingCount uint64 `json:"queue_pending_count"`
	// KVUserKeyCount is the number of live KV keys (store and delta
	// merged).
	KVUserKeyCount uint64 `json:"kv_user_key_count"`
	// KVTotalValueBytes is the summed length of their values.
	KVTotalValueBytes uint64 `json:"kv_total_value_bytes"`
}

// SemVer is a semantic version's major.minor.patch core, the part of a
// runtime version that capability filtering compares.
type SemVer struct {
	// Major, Minor and Patch are the version's three numbers.
	Major, Minor, Patch uint64
}

// ParseSemVer parses "major.minor.patch", ignoring any pre-release or build
// suffix ("1.2.3-rc.1+b5" is 1.2.3).
func ParseSemVer(s string) (SemVer, error) {
	core, _, _ := strings.Cut(s, "+")
	core, _, _ = strings.Cut(core, "-")
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return SemVer{}, fmt.Errorf("semver %q: %w: want major.minor.patch", s, ErrInvalidInput)
	}
	var v [3]uint64
	for i, p := range parts {
		n, err := strconv.ParseUint(p, 10, 64)
		if err != nil || (len(p) > 1 && p[0] == '0') {
			return SemVer{}, fmt.Errorf("semver %q: %w: bad number %q", s, ErrInvalidInput, p)
		}
		v[i] = n
	}
	return SemVer{v[0], v[1], v[2]}, nil
}

// String formats the version as "major.minor.patch".
func (v SemVer) String() string {
	return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
}

// Compare returns -1, 0 or +1 as v is below, equal to or above w.
func (v SemVer) Compare(w SemVer) int {
	return slices.Compare([]uint64{v.Major, v.Minor, v.Patch}, []uint64{w.Major, w.Minor, w.Patch})
}

// SemverRange is an inclusive range of versions.
type SemverRange struct {
	// Min and Max are the lower and upper bounds, both inclusive.
	Min, Max SemVer
}

// Contains reports whether Min <= v <= Max.
func (r SemverRange) Contains(v SemVer) bool {
	return r.Min.Compare(v) <= 0 && v.Compare(r.Max) <= 0
}

// CapabilityFilter tells [Provider.FetchOrchestrationItem] which pinned
// runtime versions a dispatcher can replay. Providers honour only the first
// range; an empty list supports nothing.
type CapabilityFilter struct {
	// SupportedVersions lists the replayable version ranges; providers use
	// only the first, and an empty list admits nothing.
	SupportedVersions []SemverRange
}

// IsCompatible reports whether any range contains v.
func (f CapabilityFilter) IsCompatible(v SemVer) bool {
	for _, r := range f.SupportedVersions {
		if r.Contains(v) {
			return true
		}
	}
	return false
}

// Admits reports whether a fetch with this filter may deliver an instance
// whose current execution is pinned to pinned (nil when unpinned or when
// the instance has no execution yet). Only the first range is consulted, as
// the contract specifies; unpinned instances are always admitted; an empty
// range list admits nothing.
func (f CapabilityFilter) Admits(pinned *SemVer) bool {
	if len(f.SupportedVersions) == 0 {
		return false
	}
	return pinned == nil || f.SupportedVersions[0].Contains(*pinned)
}

// TagFilterMode selects which activity tags a [TagFilter] accepts.
type TagFilterMode int

// Tag filter modes. The zero value, TagDefaultOnly, is the default.
const (
	// TagDefaultOnly accepts only untagged activities.
	TagDefaultOnly TagFilterMode = iota
	// TagOnly accepts only activities carrying one of the filter's tags.
	TagOnly
	// TagDefaultAnd accepts untagged activities and those carrying one of
	// the filter's tags.
	TagDefaultAnd
	// TagAny accepts every activity.
	TagAny
	// TagNone accepts nothing (an orchestrator-only node).
	TagNone
)

// String returns the mode's duroxide name.
func (m TagFilterMode) String() string {
	switch m {
	case TagDefaultOnly:
		return "DefaultOnly"
	case TagOnly:
		return "Tags"
	case TagDefaultAnd:
		return "DefaultAnd"
	case TagAny:
		return "Any"
	case TagNone:
		return "None"
	}
	return "TagFilterMode(" + strconv.Itoa(int(m)) + ")"
}

// TagFilter selects the activities [Provider.FetchWorkItem] may return by
// tag. The zero value accepts only untagged activities. Build the other
// filters with [AnyTag], [NoTags], [OnlyTags] and [DefaultAndTags].
type TagFilter struct {
	mode TagFilterMode
	tags []string // sorted, unique
}

// DefaultOnlyTags returns the filter that accepts only untagged activities
// (the zero TagFilter).
func DefaultOnlyTags() TagFilter { return TagFilter{} }

// AnyTag returns the filter that accepts every activity.
func AnyTag() TagFilter { return TagFilter{mode: TagAny} }

// NoTags returns the filter that accepts nothing.
func NoTags() TagFilter { return TagFilter{mode: TagNone} }

// OnlyTags returns a filter that accepts only activities tagged with one of
// tags. It needs 1 to [MaxWorkerTags] distinct tags; otherwise the error
// wraps [ErrInvalidInput].
func OnlyTags(tags ...string) (TagFilter, error) {
	return newTagFilter(TagOnly, tags)
}

// DefaultAndTags returns a filter that accepts untagged activities and those
// tagged with one of tags. It needs 1 to [MaxWorkerTags] distinct tags;
// otherwise the error wraps [ErrInvalidInput].
func DefaultAndTags(tags ...string) (TagFilter, error) {
	return newTagFilter(TagDefaultAnd, tags)
}

func newTagFilter(mode TagFilterMode, tags []string) (TagFilter, error) {
	set := slices.Clone(tags)
	slices.Sort(set)
	set = slices.Compact(set)
	switch {
	case len(set) == 0:
		return TagFilter{}, fmt.Errorf("tag filter %s: %w: needs at least one tag", mode, ErrInvalidInput)
	case len(set) > MaxWorkerTags:
		return TagFilter{}, fmt.Errorf("tag filter %s: %w: at most %d tags, got %d", mode, ErrInvalidInput, MaxWorkerTags, len(set))
	}
	return TagFilter{mode: mode, tags: set}, nil
}

// Mode returns the filter's mode.
func (f TagFilter) Mode() TagFilterMode { return f.mode }

// Tags returns the filter's tags, sorted; nil for modes without tags.
func (f TagFilter) Tags() []string { return slices.Clone(f.tags) }

// Matches reports whether an activity with tag (nil for untagged) passes
// the filter.
func (f TagFilter) Matches(tag *string) bool {
	switch f.mode {
	case TagAny:
		return true
	case TagNone:
		return false
	case TagDefaultOnly:
		return tag == nil
	case TagOnly:
		return tag != nil && slices.Contains(f.tags, *tag)
	case TagDefaultAnd:
		return tag == nil || slices.Contains(f.tags, *tag)
	}
	return false
}

// String describes the filter, such as "DefaultAnd[gpu,io]".
func (f TagFilter) String() string {
	if len(f.tags) == 0 {
		return f.mode.String()
	}
	return f.mode.String() + "[" + strings.Join(f.tags, ",") + "]"
}
