package locks

import (
	"context"
	"crypto/rand"
	"time"
)

// Locker is a set of named distributed locks with leases and fencing
// tokens. [NewMemory] and [NewDynamo] return implementations; package
// lockstest checks any implementation against this contract.
//
// Every call names a key (a non-empty UTF-8 string of at most [MaxKeyBytes]
// bytes) and acts for an owner: the locker's own token ([Locker.Owner]) or
// the one a call passes with [WithOwner]. Invalid input fails with an error
// wrapping [ErrInvalidInput] and writes nothing. All methods are safe for
// concurrent use.
type Locker interface {
	// Acquire takes the lock key for ttl (at least a millisecond) if it is
	// free: never held, released, reset, or its holder's lease has ended.
	// It returns acquired true and the new holder's [Lease], whose Fence
	// is larger than that of every earlier holder of key. The lock is not
	// reentrant: an owner that already holds key does not acquire it
	// again (acquired is false), so goroutines sharing one owner exclude
	// each other too.
	//
	// By default Acquire tries once. With [WithWait] it blocks, up to the
	// wait or until ctx ends, for a release notice of key or for the end
	// of the holder's lease, and tries again then; it makes no request
	// while it waits. A wait that runs out returns acquired false and a
	// nil error; a ctx that ends returns ctx's error.
	Acquire(ctx context.Context, key string, ttl time.Duration, optFns ...func(*CallOptions)) (lease Lease, acquired bool, err error)

	// Release frees key if the owner holds it with a lease that has not
	// ended, and sends a release notice to the waiters of key. It reports
	// false, and changes nothing, when key is free, held by another owner
	// or its lease has ended: a holder whose lease ended cannot release.
	Release(ctx context.Context, key string, optFns ...func(*CallOptions)) (released bool, err error)

	// Extend sets the lease of the owner's hold on key to end ttl from now
	// (at least a millisecond; it may shorten the lease). It reports false,
	// and changes nothing, when key is free, held by another owner or the
	// lease has ended. The fencing token stays the same.
	Extend(ctx context.Context, key string, ttl time.Duration, optFns ...func(*CallOptions)) (extended bool, err error)

	// Reset frees key whoever holds it, for recovery after a crash, and
	// sends a release notice. It reports whether a holder with a lease
	// that had not ended was removed. Fencing tokens of later holders
	// stay larger than those of holders before the reset.
	Reset(ctx context.Context, key string) (removed bool, err error)

	// List returns the locks held now with leases that have not ended,
	// ordered by key. Implementations backed by an index may lag behind
	// writes (see their documentation).
	List(ctx context.Context) ([]Holder, error)

	// Owner returns the locker's own owner token, used by every call
	// that does not pass [WithOwner].
	Owner() string

	// Close wakes the blocked Acquire calls, which return an error
	// wrapping [ErrClosed], and waits for the locker's goroutines to end.
	// Later calls fail with [ErrClosed]. Close is idempotent.
	Close() error
}

// Lease describes a hold on a lock, as [Locker.Acquire] returns it.
type Lease struct {
	// Key is the lock.
	Key string
	// Owner is the holder's owner token.
	Owner string
	// Fence is the fencing token: larger for every new holder of Key,
	// across processes, lease expiry, [Locker.Reset] and the removal of
	// idle lock rows. Pass it to the resource the lock guards, which
	// refuses writes carrying a smaller token than one it has seen.
	Fence int64
	// Until is when the lease ends, to the millisecond.
	Until time.Time
}

// Holder is a held lock as [Locker.List] returns it.
type Holder struct {
	// Key is the lock.
	Key string
	// Owner is the holder's owner token.
	Owner string
	// Until is when the holder's lease ends, to the millisecond.
	Until time.Time
}

// CallOptions adjusts one call of a [Locker]. Set them with the option
// functions [WithOwner] and [WithWait], or with any func(*CallOptions).
type CallOptions struct {
	// Owner acts for this owner instead of the locker's own token.
	// Default "" (the locker's token); otherwise a UTF-8 string of at most
	// [MaxOwnerBytes] bytes.
	Owner string

	// Wait is how long [Locker.Acquire] blocks for a lock that is held.
	// Default 0: try once and return. Must not be negative, and is
	// accepted by Acquire only: other calls fail with [ErrInvalidInput]
	// when it is set.
	Wait time.Duration
}

// WithOwner makes a call act for owner instead of the locker's own token:
// for instance a job runner that acquires in one process and releases in
// another.
func WithOwner(owner string) func(*CallOptions) {
	return func(o *CallOptions) { o.Owner = owner }
}

// WithWait makes [Locker.Acquire] block up to d for a lock that is held;
// see [CallOptions.Wait].
func WithWait(d time.Duration) func(*CallOptions) {
	return func(o *CallOptions) { o.Wait = d }
}

// Limits of keys and owners.
const (
	// MaxKeyBytes is the longest lock key: the key is a partition key
	// after a two-byte prefix, and DynamoDB limits partition keys to 2,048
	// bytes.
	MaxKeyBytes = 2046
	// MaxOwnerBytes is the longest owner token: the owner is part of an
	// index sort key, which DynamoDB limits to 1,024 bytes.
	MaxOwnerBytes = 512
)

// newToken returns a random token of 26 characters, for owners and write
// nonces.
func newToken() string { return rand.Text() }
