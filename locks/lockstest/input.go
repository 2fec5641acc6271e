package lockstest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/duradyn/duradyn/locks"
)

func inputTests() []testCase {
	return []testCase{
		{name: "Input/Invalid", run: invalidInput},
		{name: "Input/Limits", run: limits},
	}
}

// invalidInput: every call the contract forbids fails with ErrInvalidInput
// and writes nothing.
func invalidInput(t *testing.T, e *env) {
	long := strings.Repeat("k", locks.MaxKeyBytes+1)
	longOwner := strings.Repeat("o", locks.MaxOwnerBytes+1)
	acquires := []struct {
		name string
		key  string
		ttl  time.Duration
		opts []func(*locks.CallOptions)
	}{
		{"empty key", "", time.Second, nil},
		{"key too long", long, time.Second, nil},
		{"key not UTF-8", "k\xff", time.Second, nil},
		{"zero ttl", "k", 0, nil},
		{"negative ttl", "k", -time.Second, nil},
		{"ttl under a millisecond", "k", 999 * time.Microsecond, nil},
		{"negative wait", "k", time.Second, []func(*locks.CallOptions){locks.WithWait(-time.Second)}},
		{"owner too long", "k", time.Second, []func(*locks.CallOptions){locks.WithOwner(longOwner)}},
		{"owner not UTF-8", "k", time.Second, []func(*locks.CallOptions){locks.WithOwner("\xc3")}},
	}
	for _, c := range acquires {
		lease, ok, err := e.a.Acquire(e.ctx, c.key, c.ttl, c.opts...)
		if !isInvalid(err) || ok || lease != (locks.Lease{}) {
			t.Errorf("Acquire with %s = %+v, %v, %v; want ErrInvalidInput", c.name, lease, ok, err)
		}
	}
	others := []struct {
		name string
		call func() (bool, error)
	}{
		{"Release of an empty key", func() (bool, error) { return e.a.Release(e.ctx, "") }},
		{"Release of a key too long", func() (bool, error) { return e.a.Release(e.ctx, long) }},
		{"Release with a wait", func() (bool, error) { return e.a.Release(e.ctx, "k", locks.WithWait(time.Second)) }},
		{"Release with an owner too long", func() (bool, error) { return e.a.Release(e.ctx, "k", locks.WithOwner(longOwner)) }},
		{"Extend of an empty key", func() (bool, error) { return e.a.Extend(e.ctx, "", time.Second) }},
		{"Extend with a zero ttl", func() (bool, error) { return e.a.Extend(e.ctx, "k", 0) }},
		{"Extend with a wait", func() (bool, error) { return e.a.Extend(e.ctx, "k", time.Second, locks.WithWait(time.Second)) }},
		{"Reset of an empty key", func() (bool, error) { return e.a.Reset(e.ctx, "") }},
		{"Reset of a key not UTF-8", func() (bool, error) { return e.a.Reset(e.ctx, "\xff") }},
	}
	for _, c := range others {
		if ok, err := c.call(); !isInvalid(err) || ok {
			t.Errorf("%s = %v, %v; want ErrInvalidInput", c.name, ok, err)
		}
	}
	var pe interface{ Unwrap() error }
	if _, _, err := e.a.Acquire(e.ctx, "", time.Second); !errors.As(err, &pe) {
		t.Errorf("invalid-input error %T does not wrap its cause", err)
	}
	// Nothing was written: the key the bad calls named is free, and
	// nothing is listed.
	e.expectList(t, e.b, nil)
	e.mustAcquire(t, e.b, "k", time.Second)
}

// limits: keys and owners of the longest allowed size, and keys and owners
// holding any Unicode, work.
func limits(t *testing.T, e *env) {
	key := strings.Repeat("k", locks.MaxKeyBytes)
	owner := strings.Repeat("ö", locks.MaxOwnerBytes/2)
	lease := e.mustAcquire(t, e.a, key, time.Minute, locks.WithOwner(owner))
	if lease.Owner != owner {
		t.Fatalf("lease owner of %d bytes; want %d", len(lease.Owner), len(owner))
	}
	e.mustNotAcquire(t, e.b, key, time.Minute)
	e.expectList(t, e.b, []locks.Holder{{Key: key, Owner: owner, Until: lease.Until}})
	ok, err := e.b.Release(e.ctx, key, locks.WithOwner(owner))
	expectBool(t, "Release", ok, err, true)
}
