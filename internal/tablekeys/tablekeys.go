package tablekeys

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// Prefixes of the table's partition key (attribute pk).
const (
	// InstancePrefix starts an instance's partition: its control rows and
	// history.
	InstancePrefix = "I#"
	// WorkerPrefix starts the partition of an instance's worker-queue rows.
	WorkerPrefix = "W#"
	// SessionPrefix starts the partition of a session record.
	SessionPrefix = "S#"
	// LayoutPK is the whole partition key of the table's layout record. It
	// starts with '#', which no other partition key does but MetricsPK.
	LayoutPK = "#LAYOUT"
	// MetricsPK is the whole partition key of the counter cells of the
	// workflow provider's SystemMetrics.
	MetricsPK = "#METRICS"
	// JobPrefix starts the partition of a job.
	JobPrefix = "J#"
	// LockPrefix starts the partition of a lock.
	LockPrefix = "K#"
)

// Prefixes of the ready index's partition key (attribute rq_pk), followed
// by a shard number.
const (
	// ReadyOrchestratorPrefix starts the ready-index partition of
	// orchestrator messages.
	ReadyOrchestratorPrefix = "O#"
	// ReadyWorkerPrefix starts the ready-index partition of worker rows.
	ReadyWorkerPrefix = "W#"
)

// Prefixes of the instances index's partition key (attribute li_pk),
// followed by a shard number.
const (
	// ListInstancesPrefix starts the index partition of instance metadata
	// rows.
	ListInstancesPrefix = "L#"
	// ListSessionsPrefix starts the index partition of session records.
	ListSessionsPrefix = "S#"
	// JobIndexPrefix starts the index partition of jobs.
	JobIndexPrefix = "J#"
	// LockIndexPrefix starts the index partition of held locks.
	LockIndexPrefix = "K#"
)

// ErrBadKey reports a stored key that does not parse as the item it should
// be: data written by something other than the package that reads it.
var ErrBadKey = errors.New("malformed key")

// Shard maps a routing key to a shard in [0, shards): the FNV-1a 32-bit
// hash of key modulo shards. shards must be positive.
func Shard(key string, shards int) int {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32() % uint32(shards))
}

// Num20 formats n zero-padded to 20 digits, so that string order is numeric
// order for every uint64.
func Num20(n uint64) string {
	s := strconv.FormatUint(n, 10)
	return strings.Repeat("0", 20-len(s)) + s
}

// ParseNum20 parses a 20-digit number written by [Num20]. The error wraps
// [ErrBadKey].
func ParseNum20(s string) (uint64, error) {
	if len(s) != 20 {
		return 0, fmt.Errorf("%w: %q is not a 20-digit number", ErrBadKey, s)
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q: %v", ErrBadKey, s, err)
	}
	return n, nil
}

// Digest returns the hex SHA-256 of value: 64 bytes that stand in a key for
// a value too long to fit it. The row keyed this way must store the value
// itself in an attribute, since the digest cannot be reversed.
func Digest(value string) string {
	sum := sha256.Sum256([]byte(value))
	return hex.EncodeToString(sum[:])
}
