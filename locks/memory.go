package locks

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/duradyn/duradyn/provider"
)

// MemoryStore holds the locks of one or more [Memory] lockers: lockers
// that share a store behave as processes sharing a DynamoDB table, and
// their release notices reach each other's waiters. Create it with
// [NewMemoryStore]. It keeps every key it has seen (for its fencing
// counter) for its whole life.
type MemoryStore struct {
	mu      sync.Mutex
	locks   map[string]*memoryLock
	waiters waitRegistry
}

// memoryLock is the state of one key. A key with no owner is free.
type memoryLock struct {
	owner   string
	untilMs int64 // lease end, epoch milliseconds
	fence   int64 // the last holder's fencing token
}

// NewMemoryStore returns an empty store.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{locks: make(map[string]*memoryLock)}
}

// MemoryOptions configures a [Memory] locker. The zero value is valid.
type MemoryOptions struct {
	// Owner is the locker's owner token. Default: a random token of 26
	// characters. At most [MaxOwnerBytes] bytes of UTF-8.
	Owner string
	// Clock is the time of leases and waits. Default [SystemClock].
	Clock Clock
	// Store holds the locks. Default: a new store of the locker's own.
	Store *MemoryStore
}

// resolve applies defaults to a copy of o and validates it.
func (o MemoryOptions) resolve() (MemoryOptions, error) {
	if o.Owner == "" {
		o.Owner = newToken()
	}
	if err := checkOwner(o.Owner); err != nil {
		return o, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	if o.Clock == nil {
		o.Clock = SystemClock{}
	}
	if o.Store == nil {
		o.Store = NewMemoryStore()
	}
	return o, nil
}

// ErrInvalidOptions is wrapped by the errors [NewMemory] and [NewDynamo]
// return for options they cannot use.
var ErrInvalidOptions = errors.New("locks: invalid options")

// Memory is a [Locker] that keeps its locks in a [MemoryStore]: for tests,
// and for programs of one process. Create it with [NewMemory].
type Memory struct {
	o       MemoryOptions
	store   *MemoryStore
	blocker blocker

	closeOnce sync.Once
	done      chan struct{} // closed by Close
}

var _ Locker = (*Memory)(nil)

// NewMemory returns a [Memory] locker with the options optFns set.
func NewMemory(optFns ...func(*MemoryOptions)) (*Memory, error) {
	var o MemoryOptions
	for _, fn := range optFns {
		if fn != nil {
			fn(&o)
		}
	}
	o, err := o.resolve()
	if err != nil {
		return nil, err
	}
	m := &Memory{o: o, store: o.Store, done: make(chan struct{})}
	m.blocker = blocker{clock: o.Clock, waiters: &o.Store.waiters, done: m.done}
	return m, nil
}

// Owner returns the locker's owner token.
func (m *Memory) Owner() string { return m.o.Owner }

// Close wakes this locker's blocked Acquire calls. It always returns nil.
func (m *Memory) Close() error {
	m.closeOnce.Do(func() { close(m.done) })
	return nil
}

// closed reports whether Close was called.
func (m *Memory) closed() bool {
	select {
	case <-m.done:
		return true
	default:
		return false
	}
}

// begin validates a call and checks that the locker is open.
func (m *Memory) begin(op, key string, ttl time.Duration, needsTTL bool, optFns []func(*CallOptions)) (call, error) {
	c, err := newCall(op, key, ttl, needsTTL, m.o.Owner, optFns)
	if err != nil {
		return c, err
	}
	if m.closed() {
		return c, closedError(op)
	}
	return c, nil
}

// Acquire implements [Locker.Acquire].
func (m *Memory) Acquire(ctx context.Context, key string, ttl time.Duration, optFns ...func(*CallOptions)) (Lease, bool, error) {
	c, err := m.begin(opAcquire, key, ttl, true, optFns)
	if err != nil {
		return Lease{}, false, err
	}
	return m.blocker.acquire(ctx, c, func(ctx context.Context) (attempt, error) {
		if err := ctx.Err(); err != nil {
			return attempt{}, provider.Permanent(c.op, err, "%v", err)
		}
		return m.tryAcquire(c), nil
	})
}

// tryAcquire takes c.key if it is free.
func (m *Memory) tryAcquire(c call) attempt {
	s := m.store
	s.mu.Lock()
	defer s.mu.Unlock()
	now := m.o.Clock.Now()
	l := s.locks[c.key]
	if l == nil {
		l = &memoryLock{}
		s.locks[c.key] = l
	}
	if live(l, now) {
		return attempt{holderFence: l.fence, holderUntil: time.UnixMilli(l.untilMs)}
	}
	l.owner, l.untilMs = c.owner, now.Add(c.ttl).UnixMilli()
	l.fence++
	return attempt{acquired: true, lease: Lease{Key: c.key, Owner: c.owner, Fence: l.fence, Until: time.UnixMilli(l.untilMs)}}
}

// live reports whether l has a holder whose lease has not ended at now.
func live(l *memoryLock, now time.Time) bool {
	return l != nil && l.owner != "" && now.UnixMilli() < l.untilMs
}

// Release implements [Locker.Release].
func (m *Memory) Release(ctx context.Context, key string, optFns ...func(*CallOptions)) (bool, error) {
	c, err := m.begin(opRelease, key, 0, false, optFns)
	if err != nil {
		return false, err
	}
	return m.free(c, true)
}

// Reset implements [Locker.Reset].
func (m *Memory) Reset(ctx context.Context, key string) (bool, error) {
	c, err := m.begin(opReset, key, 0, false, nil)
	if err != nil {
		return false, err
	}
	return m.free(c, false)
}

// free removes the live holder of c.key (only when it is c.owner if
// ownerOnly is set) and notifies the waiters.
func (m *Memory) free(c call, ownerOnly bool) (bool, error) {
	s := m.store
	s.mu.Lock()
	l := s.locks[c.key]
	if !live(l, m.o.Clock.Now()) || (ownerOnly && l.owner != c.owner) {
		s.mu.Unlock()
		return false, nil
	}
	l.owner, l.untilMs = "", 0
	fence := l.fence
	s.mu.Unlock()
	s.waiters.notify(c.key, fence)
	return true, nil
}

// Extend implements [Locker.Extend].
func (m *Memory) Extend(ctx context.Context, key string, ttl time.Duration, optFns ...func(*CallOptions)) (bool, error) {
	c, err := m.begin(opExtend, key, ttl, true, optFns)
	if err != nil {
		return false, err
	}
	s := m.store
	s.mu.Lock()
	defer s.mu.Unlock()
	now := m.o.Clock.Now()
	l := s.locks[c.key]
	if !live(l, now) || l.owner != c.owner {
		return false, nil
	}
	l.untilMs = now.Add(c.ttl).UnixMilli()
	return true, nil
}

// List implements [Locker.List]. It is exact: the store is read under its
// lock.
func (m *Memory) List(ctx context.Context) ([]Holder, error) {
	if m.closed() {
		return nil, closedError(opList)
	}
	s := m.store
	s.mu.Lock()
	now := m.o.Clock.Now()
	var out []Holder
	for key, l := range s.locks {
		if live(l, now) {
			out = append(out, Holder{Key: key, Owner: l.owner, Until: time.UnixMilli(l.untilMs)})
		}
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b Holder) int { return cmp.Compare(a.Key, b.Key) })
	return out, nil
}
