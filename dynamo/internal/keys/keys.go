// Package keys builds and parses the table keys of the dynamo provider:
// the only place they are made (see docs/design.md §3).
package keys

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/duradyn/duradyn/internal/tablekeys"
)

// This file is the only place table keys are built or parsed (see
// docs/design.md §3). Every key is a fixed prefix followed by fixed-width
// numbers and at most one free-form value, which always comes last. No
// free-form value is followed by a separator and another value, so the
// encoding is injective whatever characters ids, session ids and KV keys
// hold.

// Partition-key prefixes. They are registered in package tablekeys with
// those of the other packages that share the table, which keeps them apart.
const (
	InstancePrefix = tablekeys.InstancePrefix // an instance's partition: control rows and history
	WorkerPrefix   = tablekeys.WorkerPrefix   // an instance's worker-queue rows
	SessionPrefix  = tablekeys.SessionPrefix  // a session record

	// LayoutPK and LayoutSK key the table's layout record. The partition
	// starts with '#', so it is none of the prefixed partitions above.
	LayoutPK = tablekeys.LayoutPK
	LayoutSK = "#LAYOUT"

	// MetricsPK is the partition of the counter cells (MetricsCellSK).
	MetricsPK = tablekeys.MetricsPK
)

// MetricsCells is the number of counter cells. The cells only ever add up:
// a transaction adds its change to any cell, and the writer picks one its
// other transactions in flight do not write.
const MetricsCells = 32

// MetricsCellSK is the sort key of counter cell k, 0 <= k < MetricsCells.
func MetricsCellSK(k int) string { return fmt.Sprintf("C#%02d", k) }

// Sort keys and sort-key prefixes inside an instance partition. Control
// rows start with '#', so the range sk < ControlEnd holds all of them and no
// history.
const (
	Meta        = "#META"
	Lock        = "#LOCK"
	ExecPrefix  = "#EXEC#"
	QueuePrefix = "#Q#"
	KVPrefix    = "#KV#"
	ChildPrefix = "C#"
	HistPrefix  = "H#"
	Session     = "#SESSION"

	// Hashed variants of the prefixes above, for values too long for a
	// sort key (see bounded).
	KVHashedPrefix    = "#KH#"
	ChildHashedPrefix = "CH#"
	StagePrefix       = "T#" // staging rows of a large turn (outside the control range)
	ControlEnd        = "$"  // the byte after '#': sk < ControlEnd selects control rows

	// KVRowsPrefix starts the sort key of every KV row (plain and hashed)
	// and of no other row.
	KVRowsPrefix = "#K"
)

// Prefixes of the ready index's and the instances index's partition keys.
const (
	ReadyOrchestratorPrefix = tablekeys.ReadyOrchestratorPrefix
	ReadyWorkerPrefix       = tablekeys.ReadyWorkerPrefix
	ListInstancesPrefix     = tablekeys.ListInstancesPrefix
)

// ErrBadKey reports a stored key that does not parse as the item it should
// be: data written by something other than this package. It is
// [tablekeys.ErrBadKey], so errors.Is matches either name.
var ErrBadKey = tablekeys.ErrBadKey

// Num20 formats n zero-padded to 20 digits, so that string order is numeric
// order for every uint64: [tablekeys.Num20].
func Num20(n uint64) string { return tablekeys.Num20(n) }

// ParseNum20 parses a 20-digit number written by Num20:
// [tablekeys.ParseNum20]. The error wraps [ErrBadKey].
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

// TurnMarkSK is the sort key of the mark of a large turn that is being
// applied to an execution: inside the execution's history range, after
// every event, so that a read of the history meets it last.
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

// QueueSK is the sort key of the orchestrator message at queue position
// pos, which MessageSK builds.
func QueueSK(pos string) string { return QueuePrefix + pos }

// MessageSK is the sort key of the orchestrator message of queue sequence
// seq that becomes visible at visibleMs: messages sort by that time, then
// by seq, so that the messages visible at a time are exactly those below
// MessagesEnd of it and a fetch's range never holds a future timer.
func MessageSK(visibleMs int64, seq string) string {
	return QueueSK(Num20(uint64(max(visibleMs, 0))) + "#" + seq)
}

// MessagesEnd is the exclusive end of the sort keys of the messages
// visible at nowMs (MessageSK).
func MessagesEnd(nowMs int64) string { return QueueSK(Num20(uint64(max(nowMs+1, 0)))) }

// ParseMessageSK returns the visibility time and the queue sequence of a
// message's sort key (MessageSK).
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

// KVSK is the sort key of a KV key's row, which holds the key's stored
// value and the current execution's write of it.
func KVSK(key string) string { return bounded(KVPrefix, KVHashedPrefix, key) }

// ChildSK is the sort key of a child link in the parent's partition.
func ChildSK(child string) string { return bounded(ChildPrefix, ChildHashedPrefix, child) }

// MaxSortKeyBytes is DynamoDB's limit on a sort key (of the table or an
// index).
const MaxSortKeyBytes = 1024

// bounded returns plain+value when that fits a sort key, else
// hashed+[tablekeys.Digest](value). The two prefixes differ, so a plain key
// never equals a hashed one; rows keyed this way also store the value
// itself in an attribute, which readers use.
func bounded(plain, hashed, value string) string {
	if len(plain)+len(value) <= MaxSortKeyBytes {
		return plain + value
	}
	return hashed + tablekeys.Digest(value)
}

// WorkerPK is the partition of an instance's worker-queue rows.
func WorkerPK(instance string) string { return WorkerPrefix + instance }

// WorkerSK is the sort key of an activity's worker row: its identity within
// the instance.
func WorkerSK(executionID, activityID uint64) string {
	return Num20(executionID) + "#" + Num20(activityID)
}

// SessionPK is the partition of a session record.
func SessionPK(session string) string { return SessionPrefix + session }

// ShardOf maps a routing key (instance or session id) to a shard in
// [0, shards): [tablekeys.Shard].
func ShardOf(key string, shards int) int { return tablekeys.Shard(key, shards) }

// ReadyPK is the ready-index partition of one queue's shard: the queue's
// prefix ([ReadyOrchestratorPrefix] or [ReadyWorkerPrefix]) and the shard.
func ReadyPK(prefix string, shard int) string { return prefix + strconv.Itoa(shard) }

// ReadyShard returns the shard of readyPK, a ready-index partition of the
// queue with prefix; false when it is another queue's or malformed.
func ReadyShard(readyPK, prefix string) (int, bool) {
	digits, ok := strings.CutPrefix(readyPK, prefix)
	if !ok || digits == "" || strings.TrimLeft(digits, "0123456789") != "" || len(digits) > 1 && digits[0] == '0' {
		return 0, false
	}
	shard, err := strconv.Atoi(digits)
	return shard, err == nil
}

// ReadyOrchestratorPK is the ready-index partition of an instance's
// messages.
func ReadyOrchestratorPK(shard int) string { return ReadyPK(ReadyOrchestratorPrefix, shard) }

// ReadyWorkerPK is the ready-index partition of a worker row.
func ReadyWorkerPK(shard int) string { return ReadyPK(ReadyWorkerPrefix, shard) }

// WorkerRoutingKey is what a worker row's shard is computed from: its
// session when it has one (so a session's activities stay in order), else
// its instance.
func WorkerRoutingKey(instance string, session *string) string {
	if session != nil {
		return "s:" + *session
	}
	return "i:" + instance
}

// ListInstancesPK is the instances-index partition of an instance's
// metadata row.
func ListInstancesPK(shard int) string { return ListInstancesPrefix + strconv.Itoa(shard) }

// ListInstancesSK orders an instance's metadata row in the instances index:
// by creation time, then id.
func ListInstancesSK(createdAtMs uint64, instance string) string {
	return bounded(Num20(createdAtMs)+"#", Num20(createdAtMs)+"~", instance)
}

// EndedListPrefix starts the instances-index sort key of an instance that
// has ended (Completed or Failed): ListInstancesSK sort keys start with a
// digit, so the entries of running instances all sort before
// EndedListPrefix and those of ended ones after it.
const EndedListPrefix = "~"

// EndedListSK is the instances-index sort key of an ended instance whose
// running entry would be listSK.
func EndedListSK(listSK string) string { return EndedListPrefix + listSK }

// ListOrderSK is the sort key an instances-index entry is listed by:
// creation time, then id, whether the instance has ended or not.
func ListOrderSK(listSK string) string { return strings.TrimPrefix(listSK, EndedListPrefix) }

// StageSK is the sort key of staging row n of large turn turnID (a
// fixed-width hex id).
func StageSK(turnID string, n int) string {
	return StagePrefix + turnID + "#" + Num20(uint64(n))
}

// StagePrefixOf is the sort-key prefix of large turn turnID's staging rows.
func StagePrefixOf(turnID string) string { return StagePrefix + turnID + "#" }

// ParseWorkerKey returns the instance, execution and activity of a worker
// row's keys.
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

// SessionsPK is the instances-index partition of the session records of
// owners in one shard.
func SessionsPK(shard int) string { return tablekeys.ListSessionsPrefix + strconv.Itoa(shard) }

// SessionsSK orders a session record in the instances index under its
// owner. Only the owner prefix is queried, and the owner attribute is
// compared exactly, so the separator needs no escaping.
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
