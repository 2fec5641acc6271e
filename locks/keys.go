package locks

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"
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
// 21 + MaxOwnerBytes bytes, within DynamoDB's 1,024.
const (
	lockPrefix  = "K#"
	lockSK      = "#LOCK"
	shardPrefix = "K#"
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
func shardOf(key string, shards int) int {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32() % uint32(shards))
}

// shardPK is the listing-index partition of shard.
func shardPK(shard int) string { return shardPrefix + strconv.Itoa(shard) }

// num20 formats a non-negative n as 20 digits, so that string order is
// numeric order.
func num20(n int64) string { return fmt.Sprintf("%020d", n) }

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
	untilMs, err = strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return 0, "", fmt.Errorf("listing sort key %q is not a holder's: %w", sk, err)
	}
	return untilMs, owner, nil
}
