// Package keys builds and parses the dynamo provider's table keys, the
// only place they are made (docs/design.md §3). A key is a fixed prefix,
// fixed-width numbers and at most one free-form value, always last, so the
// encoding is injective whatever ids and KV keys hold.
package keys

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/duradyn/duradyn/internal/tablekeys"
)

// Partition-key prefixes, kept apart from other packages' by tablekeys.
const (
	InstancePrefix = tablekeys.InstancePrefix // an instance's partition: control rows and history
	WorkerPrefix   = tablekeys.WorkerPrefix   // an instance's worker-queue rows
	SessionPrefix  = tablekeys.SessionPrefix  // a session record

	// LayoutPK and LayoutSK key the table's layout record.
	LayoutPK = tablekeys.LayoutPK
	LayoutSK = "#LAYOUT"

	// MetricsPK is the partition of the counter cells (MetricsCellSK).
	MetricsPK = tablekeys.MetricsPK
)

// MetricsCells is the number of counter cells (docs/design.md §5).
const MetricsCells = 32

// MetricsCellSK is the sort key of counter cell k, 0 <= k < MetricsCells.
func MetricsCellSK(k int) string { return fmt.Sprintf("C#%02d", k) }

// Sort keys and prefixes inside an instance partition. Control rows start
// with '#', so sk < ControlEnd selects them and no history.
const (
	Meta        = "#META"
	Lock        = "#LOCK"
	ExecPrefix  = "#EXEC#"
	QueuePrefix = "#Q#"
	KVPrefix    = "#KV#"
	ChildPrefix = "C#"
	HistPrefix  = "H#"
	Session     = "#SESSION"

	// Hashed variants, for values too long for a sort key (bounded).
	KVHashedPrefix    = "#KH#"
	ChildHashedPrefix = "CH#"
	StagePrefix       = "T#" // staging rows of a large turn (outside the control range)
	ControlEnd        = "$"  // the byte after '#'

	// KVRowsPrefix starts every KV row's sort key, and no other's.
	KVRowsPrefix = "#K"

	// SlotSK is the sort key of an instance's activity slot: a message key
	// visible since time 0, so that every fetch's range holds it.
	SlotSK = QueuePrefix + "00000000000000000000#slot"
)

// Prefixes of the ready index's and the instances index's partition keys.
const (
	ReadyOrchestratorPrefix = tablekeys.ReadyOrchestratorPrefix
	ReadyWorkerPrefix       = tablekeys.ReadyWorkerPrefix
	ListInstancesPrefix     = tablekeys.ListInstancesPrefix
)

// ErrBadKey ([tablekeys.ErrBadKey]) reports a stored key that does not parse.
var ErrBadKey = tablekeys.ErrBadKey

// Num20 formats n zero-padded to 20 digits ([tablekeys.Num20]).
func Num20(n uint64) string { return tablekeys.Num20(n) }

// ParseNum20 parses Num20's output; the error wraps [ErrBadKey].
func ParseNum20(s string) (uint64, error) { return tablekeys.ParseNum20(s) }

// InstancePK is the partition of an instance.
func InstancePK(instance string) string { return InstancePrefix + instance }

// InstanceFromPK returns the instance id of an instance partition key.
func InstanceFromPK(pk string) (string, error) {
	id, ok := strings.CutPrefix(pk, InstancePrefix)
	if !ok {
		return "", fmt.Errorf("%w: %q is not an instance partition", ErrBadKey, pk)
	}
	return id, nil
}

// ExecSK is the sort key of an execution record.
func ExecSK(executionID uint64) string { return ExecPrefix + Num20(executionID) }

// HistorySK is the sort key of one history event.
func HistorySK(executionID, eventID uint64) string {
	return HistoryPrefix(executionID) + Num20(eventID)
}

// HistoryPrefix is the sort-key prefix of one execution's history.
func HistoryPrefix(executionID uint64) string {
	return HistPrefix + Num20(executionID) + "#"
}

// TurnMarkSK is the sort key of a large turn's mark, after its events.
func TurnMarkSK(executionID uint64) string { return HistoryPrefix(executionID) + turnMark }

// turnMark ends a turn mark's sort key; it sorts after every digit.
const turnMark = "~"

// IsTurnMarkSK reports whether sk is a turn mark's sort key.
func IsTurnMarkSK(sk string) bool {
	return strings.HasPrefix(sk, HistPrefix) && strings.HasSuffix(sk, "#"+turnMark)
}

// ParseHistorySK returns the execution and event ids of a history sort key.
func ParseHistorySK(sk string) (executionID, eventID uint64, err error) {
	rest, ok := strings.CutPrefix(sk, HistPrefix)
	if !ok || len(rest) != 41 || rest[20] != '#' {
		return 0, 0, fmt.Errorf("%w: %q is not a history key", ErrBadKey, sk)
	}
	if executionID, err = ParseNum20(rest[:20]); err != nil {
		return 0, 0, err
	}
	if eventID, err = ParseNum20(rest[21:]); err != nil {
		return 0, 0, err
	}
	return executionID, eventID, nil
}

// QueueSK is the sort key of the orchestrator message at position pos.
func QueueSK(pos string) string { return QueuePrefix + pos }

// MessageSK orders orchestrator messages by visible time, then seq, so
// that a fetch's range (below MessagesEnd) holds no future timer.
func MessageSK(visibleMs int64, seq string) string {
	return QueueSK(Num20(uint64(max(visibleMs, 0))) + "#" + seq)
}

// MessagesEnd is the exclusive end of the messages visible at nowMs.
func MessagesEnd(nowMs int64) string { return QueueSK(Num20(uint64(max(nowMs+1, 0)))) }

// ParseMessageSK returns the visible time and sequence of a MessageSK.
func ParseMessageSK(sk string) (visibleMs int64, seq string, err error) {
	rest, ok := strings.CutPrefix(sk, QueuePrefix)
	if !ok || len(rest) < 22 || rest[20] != '#' {
		return 0, "", fmt.Errorf("%w: %q is not a message key", ErrBadKey, sk)
	}
	at, err := ParseNum20(rest[:20])
	if err != nil {
		return 0, "", err
	}
	return int64(at), rest[21:], nil
}

// KVSK is the sort key of a KV key's row.
func KVSK(key string) string { return bounded(KVPrefix, KVHashedPrefix, key) }

// ChildSK is the sort key of a child link in the parent's partition.
func ChildSK(child string) string { return bounded(ChildPrefix, ChildHashedPrefix, child) }

// MaxSortKeyBytes is DynamoDB's limit on a sort key.
const MaxSortKeyBytes = 1024

// bounded returns plain+value if it fits a sort key, else
// hashed+Digest(value); such rows also store the value in an attribute.
func bounded(plain, hashed, value string) string {
	if len(plain)+len(value) <= MaxSortKeyBytes {
		return plain + value
	}
	return hashed + tablekeys.Digest(value)
}

// WorkerPK is the partition of an instance's worker-queue rows.
func WorkerPK(instance string) string { return WorkerPrefix + instance }

// WorkerSK is the sort key of an activity's worker row.
func WorkerSK(executionID, activityID uint64) string {
	return Num20(executionID) + "#" + Num20(activityID)
}

// SessionPK is the partition of a session record.
func SessionPK(session string) string { return SessionPrefix + session }

// ShardOf maps a routing key to a shard in [0, shards).
func ShardOf(key string, shards int) int { return tablekeys.Shard(key, shards) }

// ReadyPK is the ready-index partition of one queue's shard.
func ReadyPK(prefix string, shard int) string { return prefix + strconv.Itoa(shard) }

// ReadyShard returns readyPK's shard; false if another queue's or bad.
func ReadyShard(readyPK, prefix string) (int, bool) {
	digits, ok := strings.CutPrefix(readyPK, prefix)
	if !ok || digits == "" || strings.TrimLeft(digits, "0123456789") != "" || len(digits) > 1 && digits[0] == '0' {
		return 0, false
	}
	shard, err := strconv.Atoi(digits)
	return shard, err == nil
}

// ReadyOrchestratorPK is the ready-index partition of messages.
func ReadyOrchestratorPK(shard int) string { return ReadyPK(ReadyOrchestratorPrefix, shard) }

// ReadyWorkerPK is the ready-index partition of a worker row.
func ReadyWorkerPK(shard int) string { return ReadyPK(ReadyWorkerPrefix, shard) }

// WorkerRoutingKey is what a worker row is sharded by: its session, if
// any (keeping a session's activities in order), else its instance.
func WorkerRoutingKey(instance string, session *string) string {
	if session != nil {
		return "s:" + *session
	}
	return "i:" + instance
}

// ListInstancesPK is an instances-index partition of metadata rows.
func ListInstancesPK(shard int) string { return ListInstancesPrefix + strconv.Itoa(shard) }

// ListInstancesSK orders metadata rows by creation time, then id.
func ListInstancesSK(createdAtMs uint64, instance string) string {
	return bounded(Num20(createdAtMs)+"#", Num20(createdAtMs)+"~", instance)
}

// EndedListPrefix starts ended instances' list keys, after every digit.
const EndedListPrefix = "~"

// EndedListSK is the ended form of list sort key listSK.
func EndedListSK(listSK string) string { return EndedListPrefix + listSK }

// ListOrderSK is the creation-order key of an entry, ended or not.
func ListOrderSK(listSK string) string { return strings.TrimPrefix(listSK, EndedListPrefix) }

// StageSK is the sort key of staging row n of large turn turnID.
func StageSK(turnID string, n int) string {
	return StagePrefix + turnID + "#" + Num20(uint64(n))
}

// StagePrefixOf is the sort-key prefix of large turn turnID's staging rows.
func StagePrefixOf(turnID string) string { return StagePrefix + turnID + "#" }

// ParseWorkerKey returns the ids a worker row's keys hold.
func ParseWorkerKey(pk, sk string) (instance string, executionID, activityID uint64, err error) {
	instance, ok := strings.CutPrefix(pk, WorkerPrefix)
	if !ok || len(sk) != 41 || sk[20] != '#' {
		return "", 0, 0, fmt.Errorf("%w: %q/%q is not a worker row", ErrBadKey, pk, sk)
	}
	if executionID, err = ParseNum20(sk[:20]); err != nil {
		return "", 0, 0, err
	}
	if activityID, err = ParseNum20(sk[21:]); err != nil {
		return "", 0, 0, err
	}
	return instance, executionID, activityID, nil
}

// SessionsPK is the instances-index partition of one shard's sessions.
func SessionsPK(shard int) string { return tablekeys.ListSessionsPrefix + strconv.Itoa(shard) }

// SessionsSK orders a session under its owner; the separator needs no
// escaping, as the owner attribute is compared exactly.
func SessionsSK(owner, session string) string {
	return bounded(SessionsPrefix(owner), SessionsPrefix(owner), session)
}

// SessionsPrefix is the index sort-key prefix of owner's session records.
func SessionsPrefix(owner string) string {
	if len(owner) > MaxSortKeyBytes/2 {
		owner = "~" + tablekeys.Digest(owner)
	}
	return owner + "#"
}
