package jobs

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/duradyn/duradyn/internal/tablekeys"
)

// Keys of a job's item in the duradyn table. This file is the only place
// they are built or parsed.
//
//	pk    = J#<job id>
//	sk    = #JOB
//	li_pk = J#<shard>                 (shard = fnv32a(job id) mod JobShards)
//	li_sk = <next run ms n20>#<job id>  or  ~#<job id> without a next run time
//
// The job id is the only free-form value of each key and comes last, so
// keys are injective. An index sort key longer than DynamoDB's 1,024 bytes
// holds the hex SHA-256 of the id after '!' instead of '#' (<n20>!<sha> or
// ~!<sha>): index rows are re-read from the table by pk, which holds the
// id itself. "~" sorts after every digit, so jobs without a next run time
// come last in each shard. The partition-key prefixes are registered in
// package tablekeys, which keeps them apart from the other packages'.
const (
	jobPKPrefix      = tablekeys.JobPrefix
	jobSK            = "#JOB"
	jobIndexPKPrefix = tablekeys.JobIndexPrefix
	// noRunTime is the index sort key's time part for a job without a
	// next run time.
	noRunTime = "~"
	// maxIndexSKBytes is DynamoDB's limit on a sort key.
	maxIndexSKBytes = 1024
	// timeDigits is the width of the index sort key's time part.
	timeDigits = 20
)

// MaxIDBytes is the longest job id a store accepts: in the DynamoDB store
// it is a partition key after a two-byte prefix, and DynamoDB limits
// partition keys to 2,048 bytes. Every store refuses longer ids with
// [ErrInvalidJob], so that jobs move between stores unchanged.
const MaxIDBytes = 2046

// jobPK returns the partition key of the job with id.
func jobPK(id string) string { return jobPKPrefix + id }

// jobIDFromPK returns the job id a partition key holds.
func jobIDFromPK(pk string) (string, error) {
	id, ok := strings.CutPrefix(pk, jobPKPrefix)
	if !ok {
		return "", fmt.Errorf("jobs: item key %q is not a job's", pk)
	}
	return id, nil
}

// jobShard returns the index shard of the job with id.
func jobShard(id string, shards int) int { return tablekeys.Shard(id, shards) }

// jobIndexPK returns the index partition key of shard.
func jobIndexPK(shard int) string { return jobIndexPKPrefix + strconv.Itoa(shard) }

// jobIndexSK returns the index sort key of the job with id and next run
// time next (nil for none).
func jobIndexSK(id string, next *time.Time) string {
	prefix := noRunTime
	if next != nil {
		prefix = n20(next.UnixMilli())
	}
	if len(prefix)+1+len(id) > maxIndexSKBytes {
		return prefix + "!" + tablekeys.Digest(id)
	}
	return prefix + "#" + id
}

// jobIndexBefore returns the index sort key below which lie exactly the
// jobs with a next run time at or before t.
func jobIndexBefore(t time.Time) string { return n20(t.UnixMilli() + 1) }

// jobIndexTimePart returns the time part of an index sort key: jobs whose
// keys share it have the same next run time (or none).
func jobIndexTimePart(sk string) string {
	if strings.HasPrefix(sk, noRunTime) {
		return noRunTime
	}
	return sk[:min(len(sk), timeDigits)]
}

// n20 formats a non-negative number zero-padded to 20 digits, so that
// string order is numeric order: [tablekeys.Num20].
//
// A negative n (a time before 1970, such as the zero time.Time's) keeps the
// form keys have always had, a minus sign and 19 digits, which sorts before
// every non-negative key: the index bound of such a time selects no job.
// tablekeys.Num20 takes a uint64, and converting n would make it a number
// above every time instead.
func n20(n int64) string {
	if n < 0 {
		return fmt.Sprintf("%020d", n)
	}
	return tablekeys.Num20(uint64(n))
}
