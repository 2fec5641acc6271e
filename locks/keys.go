package locks

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/duradyn/duradyn/internal/tablekeys"
)

// The keys of lock rows. Every key is a fixed prefix followed by at most one
// free-form value, last, so distinct locks never share a key.
//
//	pk    = "K#" + key          (the lock's key, at most MaxKeyBytes bytes)
//	sk    = "#LOCK"
//	li_pk = "K#" + shard        (only while held; shard = fnv32a(key) mod LockShards)
//	li_sk = <lease end ms, 20 digits> + "#" + owner
//
// The index sort key orders a shard's holders by lease end, so that one
// range condition skips the leases that have ended. It is at most
// 21 + MaxOwnerBytes bytes, within DynamoDB's 1,024. The partition-key
// prefixes are registered in package tablekeys, which keeps them apart from
// the other packages'.
const (
	lockPrefix  = tablekeys.LockPrefix
	lockSK      = "#LOCK"
	shardPrefix = tablekeys.LockIndexPrefix
)

// lockPK is the partition key of key's row.
func lockPK(key string) string { return lockPrefix + key }

// keyFromPK is the inverse of lockPK.
func keyFromPK(pk string) (string, error) {
	key, ok := strings.CutPrefix(pk, lockPrefix)
	if !ok || key == "" {
		return "", fmt.Errorf("partition key %q is not a lock's", pk)
	}
	return key, nil
}

// shardOf maps a key to a shard of the listing index in [0, shards).
func shardOf(key string, shards int) int { return tablekeys.Shard(key, shards) }

// shardPK is the listing-index partition of shard.
func shardPK(shard int) string { return shardPrefix + strconv.Itoa(shard) }

// num20 formats a non-negative n as 20 digits, so that string order is
// numeric order: [tablekeys.Num20].
//
// A negative n (a time before 1970, such as the zero time.Time's) keeps the
// form keys have always had, a minus sign and 19 digits, which sorts before
// every non-negative key. tablekeys.Num20 takes a uint64, and converting n
// would make it a number above every time instead.
func num20(n int64) string {
	if n < 0 {
		return fmt.Sprintf("%020d", n)
	}
	return tablekeys.Num20(uint64(n))
}

// parseNum20 is the inverse of num20.
func parseNum20(digits string) (int64, error) {
	if strings.HasPrefix(digits, "-") {
		return strconv.ParseInt(digits, 10, 64) // num20's form of a negative n
	}
	n, err := tablekeys.ParseNum20(digits)
	if err != nil {
		return 0, err
	}
	if n > math.MaxInt64 {
		return 0, fmt.Errorf("%w: %q is out of range", tablekeys.ErrBadKey, digits)
	}
	return int64(n), nil
}

// holderSK is the listing-index sort key of a holder of owner whose lease
// ends at untilMs.
func holderSK(untilMs int64, owner string) string { return num20(untilMs) + "#" + owner }

// liveFrom is the smallest listing-index sort key of a lease that has not
// ended at now: a lease is live while now < its end.
func liveFrom(now time.Time) string { return num20(now.UnixMilli() + 1) }

// parseHolderSK is the inverse of holderSK.
func parseHolderSK(sk string) (untilMs int64, owner string, err error) {
	digits, owner, ok := strings.Cut(sk, "#")
	if !ok || len(digits) != 20 {
		return 0, "", fmt.Errorf("listing sort key %q is not a holder's", sk)
	}
	untilMs, err = parseNum20(digits)
	if err != nil {
		return 0, "", fmt.Errorf("listing sort key %q is not a holder's: %w", sk, err)
	}
	return untilMs, owner, nil
}
