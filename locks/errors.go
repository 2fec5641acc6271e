package locks

import (
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/duradyn/duradyn/provider"
)

// Errors are [*provider.Error] values: Op names the operation ("lock_acquire",
// "lock_release", "lock_extend", "lock_reset", "lock_list"), Retryable says
// whether the same call may succeed later ([provider.IsRetryable]), and the
// cause is reachable with [errors.Is] and [errors.As].
var (
	// ErrInvalidInput reports a call the contract forbids: an empty, too
	// long or non-UTF-8 key or owner, a ttl under a millisecond, a
	// negative wait, a wait given to a call other than Acquire. Nothing
	// was written. It wraps [provider.ErrInvalidInput], so either matches.
	ErrInvalidInput = fmt.Errorf("locks: %w", provider.ErrInvalidInput)

	// ErrClosed reports a call made after [Locker.Close], or a blocked
	// Acquire that Close woke.
	ErrClosed = errors.New("locks: locker closed")
)

// Operation names carried by the errors of this package.
const (
	opAcquire = "lock_acquire"
	opRelease = "lock_release"
	opExtend  = "lock_extend"
	opReset   = "lock_reset"
	opList    = "lock_list"
)

// invalid returns the permanent [ErrInvalidInput] error of op.
func invalid(op, format string, args ...any) error {
	return provider.Permanent(op, ErrInvalidInput, format, args...)
}

// closedError is the error of a call made after Close.
func closedError(op string) error {
	return provider.Permanent(op, ErrClosed, "locker closed")
}

// call is a validated call: its key, owner, ttl and wait.
type call struct {
	op    string
	key   string
	owner string
	ttl   time.Duration
	wait  time.Duration
}

// newCall validates the arguments of op. defaultOwner stands for an owner
// the options leave empty; a ttl is checked when needsTTL is set.
func newCall(op, key string, ttl time.Duration, needsTTL bool, defaultOwner string, optFns []func(*CallOptions)) (call, error) {
	var o CallOptions
	for _, fn := range optFns {
		if fn != nil {
			fn(&o)
		}
	}
	c := call{op: op, key: key, owner: o.Owner, ttl: ttl, wait: o.Wait}
	if c.owner == "" {
		c.owner = defaultOwner
	}
	if err := checkKey(op, key); err != nil {
		return c, err
	}
	switch {
	case len(c.owner) > MaxOwnerBytes:
		return c, invalid(op, "owner is %d bytes; at most %d are allowed", len(c.owner), MaxOwnerBytes)
	case !utf8.ValidString(c.owner):
		return c, invalid(op, "owner is not valid UTF-8")
	case needsTTL && ttl < time.Millisecond:
		return c, invalid(op, "ttl %v is under a millisecond", ttl)
	case o.Wait < 0:
		return c, invalid(op, "wait %v is negative", o.Wait)
	case o.Wait > 0 && op != opAcquire:
		return c, invalid(op, "a wait applies to Acquire only")
	}
	return c, nil
}

// checkKey fails for a key that cannot name a lock.
func checkKey(op, key string) error {
	switch {
	case key == "":
		return invalid(op, "empty key")
	case len(key) > MaxKeyBytes:
		return invalid(op, "key is %d bytes; at most %d are allowed", len(key), MaxKeyBytes)
	case !utf8.ValidString(key):
		return invalid(op, "key is not valid UTF-8")
	}
	return nil
}

// checkOwner fails for a locker's own owner token that cannot be stored.
func checkOwner(owner string) error {
	switch {
	case len(owner) > MaxOwnerBytes:
		return fmt.Errorf("owner is %d bytes; at most %d are allowed", len(owner), MaxOwnerBytes)
	case !utf8.ValidString(owner):
		return errors.New("owner is not valid UTF-8")
	}
	return nil
}
