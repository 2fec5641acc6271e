package dynamo

import (
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// This file is the only place table keys are built or parsed (see
// docs/design.md §3). Every key is a fixed prefix followed by fixed-width
// numbers and at most one free-form value, which always comes last. No
// free-form value is followed by a separator and another value, so the
// encoding is injective whatever characters ids, session ids and KV keys
// hold.

// Partition-key prefixes.
const (
	instancePrefix = "I#" // an instance's partition: control rows and history
	workerPrefix   = "W#" // an instance's worker-queue rows
	sessionPrefix  = "S#" // a session record
)

// Sort keys and sort-key prefixes inside an instance partition. Control
// rows start with '#', so the range sk < controlEnd holds all of them and no
// history.
const (
	skMeta        = "#META"
	skLock        = "#LOCK"
	skExecPrefix  = "#EXEC#"
	skQueuePrefix = "#Q#"
	skKVPrefix    = "#KV#"
	skDeltaPrefix = "#KD#"
	skDeltaAll    = "#KDALL"
	skChildPrefix = "C#"
	skHistPrefix  = "H#"
	skSession     = "#SESSION"
	controlEnd    = "$" // the byte after '#': sk < controlEnd selects control rows
)

// Prefixes of the ready index's partition key.
const (
	readyOrchestratorPrefix = "O#"
	readyWorkerPrefix       = "W#"
	listInstancesPrefix     = "L#"
)

// errBadKey reports a stored key that does not parse as the item it should
// be: data written by something other than this package.
var errBadKey = errors.New("malformed key")

// num20 formats n zero-padded to 20 digits, so that string order is numeric
// order for every uint64.
func num20(n uint64) string {
	s := strconv.FormatUint(n, 10)
	return strings.Repeat("0", 20-len(s)) + s
}

// parseNum20 parses a 20-digit number written by num20.
func parseNum20(s string) (uint64, error) {
	if len(s) != 20 {
		return 0, fmt.Errorf("%w: %q is not a 20-digit number", errBadKey, s)
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q: %v", errBadKey, s, err)
	}
	return n, nil
}

// instancePK is the partition of an instance.
func instancePK(instance string) string { return instancePrefix + instance }

// instanceFromPK returns the instance id of an instance partition key.
func instanceFromPK(pk string) (string, error) {
	id, ok := strings.CutPrefix(pk, instancePrefix)
	if !ok {
		return "", fmt.Errorf("%w: %q is not an instance partition", errBadKey, pk)
	}
	return id, nil
}

// execSK is the sort key of an execution record.
func execSK(executionID uint64) string { return skExecPrefix + num20(executionID) }

// historySK is the sort key of one history event.
func historySK(executionID, eventID uint64) string {
	return historyPrefix(executionID) + num20(eventID)
}

// historyPrefix is the sort-key prefix of one execution's history.
func historyPrefix(executionID uint64) string {
	return skHistPrefix + num20(executionID) + "#"
}

// parseHistorySK returns the execution and event ids of a history sort key.
func parseHistorySK(sk string) (executionID, eventID uint64, err error) {
	rest, ok := strings.CutPrefix(sk, skHistPrefix)
	if !ok || len(rest) != 41 || rest[20] != '#' {
		return 0, 0, fmt.Errorf("%w: %q is not a history key", errBadKey, sk)
	}
	if executionID, err = parseNum20(rest[:20]); err != nil {
		return 0, 0, err
	}
	if eventID, err = parseNum20(rest[21:]); err != nil {
		return 0, 0, err
	}
	return executionID, eventID, nil
}

// queueSK is the sort key of an orchestrator message.
func queueSK(seq string) string { return skQueuePrefix + seq }

// kvSK is the sort key of a KV store entry.
func kvSK(key string) string { return skKVPrefix + key }

// deltaSK is the sort key of a KV delta entry.
func deltaSK(key string) string { return skDeltaPrefix + key }

// childSK is the sort key of a child link in the parent's partition.
func childSK(child string) string { return skChildPrefix + child }

// workerPK is the partition of an instance's worker-queue rows.
func workerPK(instance string) string { return workerPrefix + instance }

// workerSK is the sort key of an activity's worker row: its identity within
// the instance.
func workerSK(executionID, activityID uint64) string {
	return num20(executionID) + "#" + num20(activityID)
}

// sessionPK is the partition of a session record.
func sessionPK(session string) string { return sessionPrefix + session }

// shardOf maps a routing key (instance or session id) to a shard in
// [0, shards).
func shardOf(key string, shards int) int {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32() % uint32(shards))
}

// readyOrchestratorPK is the ready-index partition of an instance's
// messages.
func readyOrchestratorPK(shard int) string {
	return readyOrchestratorPrefix + strconv.Itoa(shard)
}

// readyWorkerPK is the ready-index partition of a worker row.
func readyWorkerPK(shard int) string { return readyWorkerPrefix + strconv.Itoa(shard) }

// workerRoutingKey is what a worker row's shard is computed from: its
// session when it has one (so a session's activities stay in order), else
// its instance.
func workerRoutingKey(instance string, session *string) string {
	if session != nil {
		return "s:" + *session
	}
	return "i:" + instance
}

// listInstancesPK is the instances-index partition of an instance's
// metadata row.
func listInstancesPK(shard int) string { return listInstancesPrefix + strconv.Itoa(shard) }

// listInstancesSK orders an instance's metadata row in the instances index:
// by creation time, then id.
func listInstancesSK(createdAtMs uint64, instance string) string {
	return num20(createdAtMs) + "#" + instance
}
