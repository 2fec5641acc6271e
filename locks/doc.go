// Package locks provides distributed locks with leases and fencing tokens,
// on the duradyn DynamoDB table ([NewDynamo]) or in memory ([NewMemory]),
// behind one interface, [Locker]: the lock adapter of the Chronis
// scheduler, in Go.
//
// # The contract
//
// A lock is named by a key. [Locker.Acquire] takes it for a lease (a ttl)
// if it is free, and returns a [Lease] with a fencing token that is larger
// for every new holder of the key; [Locker.Extend] moves the lease end,
// [Locker.Release] frees the lock, [Locker.Reset] frees it whoever holds
// it, and [Locker.List] lists the holders. A lock whose lease has ended is
// free: anyone may acquire it, and its former holder can neither release
// nor extend it. Each locker has a random owner token ([Locker.Owner]);
// any call may act for another owner with [WithOwner], so that one process
// can release what another acquired. Locks are not reentrant: an owner
// that holds a key does not acquire it again until it releases it.
//
// Acquire tries once by default. With [WithWait] it blocks for up to the
// wait: it tries again when a release notice for the key arrives (from
// this locker at once; from other lockers and processes through
// [queues.Signals], kind [queues.Lock]) or when the lease of the holder
// its last try saw ends (a timer; the try itself returned that lease, so
// no read is needed). It polls nothing and makes no request while it
// waits.
//
// Options follow the AWS SDK's style: constructors take functional options
// on an options struct ([DynamoOptions], [MemoryOptions]) and calls take
// functional options on [CallOptions]. Invalid input fails with an error
// wrapping [ErrInvalidInput] and writes nothing; errors are
// [*provider.Error] values that say whether a retry may succeed.
//
// # Rows
//
// A [Dynamo] locker keeps one item per key in the duradyn table:
//
//	pk = K#<key>, sk = #LOCK
//	owner      the holder's owner token (absent when free)
//	lease_end  the holder's lease end, epoch ms (absent when free)
//	fence      the last holder's fencing token (kept when freed)
//	op         a random nonce of the last write, to recognise it after a lost response
//	expires_at TTL, epoch s: Retention (7 days) after the lease end or the release
//	li_pk      K#<fnv32a(key) mod LockShards> (only while held: the listing is sparse)
//	li_sk      <lease end ms, 20 digits>#<owner>
//
// The listing index is the table's instances index; its rows are ordered
// by lease end, so one key condition (li_sk >= now) skips ended leases.
//
// # Requests and cost
//
// Each operation is one conditional UpdateItem on a small item (about 1
// write capacity unit), plus the writes DynamoDB makes to the instances
// index: 1 when a holder appears or disappears there, 2 when its index
// sort key changes (an Extend, or an Acquire replacing a holder whose
// lease ended). A failed condition costs 1 write capacity unit too and
// changes nothing.
//
//	Acquire   1 UpdateItem per try (ReturnValues ALL_NEW; ALL_OLD on a failed condition)
//	          + 0 requests while blocked
//	Release   1 UpdateItem (ALL_OLD) + 1 SendMessageBatch with Signals
//	Extend    1 UpdateItem
//	Reset     1 UpdateItem (ALL_OLD) + 1 SendMessageBatch with Signals
//	List      1 Query of the index per shard and page (0.5 read unit per 4 KB, eventually consistent)
//
// Transient errors (throttling, server errors, timeouts) are retried by the
// SDK and then up to 4 times in all by the locker; a failed condition is
// an answer (false), never retried. While blocked Acquire calls wait, a
// locker with Signals runs one goroutine that waits for [queues.Lock]
// signals (one long poll per 20 s, shared with the process's other users
// of the orchestrator queue), wakes the waiters of each key and declines
// ([queues.Signals.Decline]) the signals of keys nobody here waits for, so
// that they reach the processes that do.
//
// # Clock skew
//
// DynamoDB has no clock a condition can read, so a lease end is written
// and compared by the clock of the locker that calls ([DynamoOptions.Clock]):
// a lease ends when that clock says so. A locker whose clock runs s ahead
// of the holder's takes the lock up to s before the holder's lease ends by
// the holder's clock; the holder can then neither extend nor release it.
// A locker whose clock runs s behind takes a lock only s after its lease
// ended, and a blocked Acquire there wakes s late. Keep hosts
// NTP-synchronised and leases much longer than the skew between them, and
// pass the fence to the resource the lock guards: the early holder's fence
// is larger, so the resource refuses the late writes of the one it
// replaced (TestClockSkew). [Dynamo.ClockSkew] tells how far the
// locker's clock is from DynamoDB's, measured from the Date header of each
// response, and a skew beyond [DynamoOptions.ClockSkewWarning] (default
// 1 s) is logged through DynamoOptions.Logger.
//
// Release notices are hints. One that is lost costs latency, not safety:
// the waiters wake when the lease they saw ends, or their wait does. SQS
// gives each message to one receiver, which may be a process with no waiter
// for the key, or the releasing process itself: both send the notice on to
// another process ([queues.Signals.Decline]), at most four times, so a
// notice reaches the process that waits unless many processes poll the
// orchestrator queue at once or a send fails. Callers that wait across many
// processes should keep leases short, or wait in short slices and try
// again. The fencing token each notice carries lets a waiter ignore notices
// older than the holder it saw, so duplicated, late and reordered notices
// cost nothing.
package locks
