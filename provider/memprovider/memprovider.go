package memprovider

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/duradyn/duradyn/provider"
)

// Version is the version [Provider.Version] reports.
const Version = "0.1.0"

// Compile-time checks that *Provider implements the contract.
var (
	_ provider.Provider  = (*Provider)(nil)
	_ provider.Admin     = (*Provider)(nil)
	_ provider.Describer = (*Provider)(nil)
)

// Options configures a [Provider].
type Options struct {
	// Now is the clock used for visibility times, leases, session activity
	// and timestamps. Defaults to time.Now. Long-poll waits use real time
	// regardless.
	Now func() time.Time
}

// Provider is an in-memory [provider.Provider] that also implements
// [provider.Admin] and [provider.Describer]. Create it with [New]; the zero
// value is not usable. It is safe for concurrent use.
type Provider struct {
	now func() time.Time

	mu sync.Mutex
	// seq orders enqueues and instance creation.
	seq       uint64
	instances map[string]*instance
	// orchQ and workQ hold the queues in enqueue order.
	orchQ []*orchMessage
	workQ []*workMessage
	// orchLocks holds instance locks by instance id, orchTokens the same
	// locks by token.
	orchLocks  map[string]*instanceLock
	orchTokens map[string]*instanceLock
	// workTokens maps a worker lock token to the message it locks.
	workTokens map[string]*workMessage
	sessions   map[string]*session
	// changed is closed and replaced whenever state changes in a way that
	// may make work available, waking long polls.
	changed chan struct{}
	// waitHook, when set (by tests only), is called each time a long poll
	// is about to wait.
	waitHook func()
}

// New returns an empty provider configured by optFns.
func New(optFns ...func(*Options)) *Provider {
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Provider{
		now:        o.Now,
		instances:  map[string]*instance{},
		orchLocks:  map[string]*instanceLock{},
		orchTokens: map[string]*instanceLock{},
		workTokens: map[string]*workMessage{},
		sessions:   map[string]*session{},
		changed:    make(chan struct{}),
	}
}

// Name returns "memprovider".
func (p *Provider) Name() string { return "memprovider" }

// Version returns [Version].
func (p *Provider) Version() string { return Version }

// instance holds everything stored about one instance id. hasRow reports
// whether the instance itself exists (created by an ack carrying name and
// version); executions, history and KV can exist without it, as in the
// SQLite provider's separate tables.
type instance struct {
	id                  string
	hasRow              bool
	name                string
	version             string // "" when unknown
	currentExecution    uint64
	parent              string
	customStatus        *string
	customStatusVersion uint64
	createdSeq          uint64
	createdAtMs         int64
	updatedAtMs         int64

	executions map[uint64]*execution
	history    map[uint64][]storedEvent
	kvStore    map[string]provider.KVEntry
	kvDelta    provider.KVDelta
}

// execution is one execution record.
type execution struct {
	status        string
	output        *string
	pinned        *provider.SemVer
	startedAtMs   int64
	completedAtMs *int64
}

// storedEvent is one history event in its encoded form, and the event
// decoded from it once a read has decoded it (reads then share it: callers
// do not modify a returned history).
type storedEvent struct {
	id      uint64
	data    []byte
	decoded *provider.Event
}

// orchMessage is one orchestrator-queue message.
type orchMessage struct {
	seq         uint64
	instance    string
	kind        string
	data        []byte
	visibleAtMs int64
	// enqueuedAtMs is when the message was enqueued: a pending instance's
	// creation time (provider.StatusPending).
	enqueuedAtMs int64
	// lockToken is the token of the fetch that tagged the message, if any.
	lockToken string
	attempts  uint32
}

// workMessage is one worker-queue message.
type workMessage struct {
	seq           uint64
	instance      string
	executionID   uint64
	activityID    uint64
	sessionID     *string
	tag           *string
	data          []byte
	visibleAtMs   int64
	lockToken     string
	lockedUntilMs int64
	attempts      uint32
}

// instanceLock is the lock of one instance.
type instanceLock struct {
	instance      string
	token         string
	lockedUntilMs int64
}

// session is a worker session's owner and lease.
type session struct {
	owner            string
	lockedUntilMs    int64
	lastActivityAtMs int64
}

// nowMs reads the clock in epoch milliseconds.
func (p *Provider) nowMs() int64 { return p.now().UnixMilli() }

// durMs converts d to milliseconds, rounding up; negative is 0.
func durMs(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// nextSeq returns the next sequence number. Callers hold p.mu.
func (p *Provider) nextSeq() uint64 {
	p.seq++
	return p.seq
}

// notify wakes every long poll. Callers hold p.mu.
func (p *Provider) notify() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// newToken returns a fresh lock token.
func newToken() string {
	return "lock_" + rand.Text()
}

// instanceRecord returns the record of id, creating it when create is set;
// nil when it does not exist and create is not set. Callers hold p.mu.
func (p *Provider) instanceRecord(id string, create bool) *instance {
	inst := p.instances[id]
	if inst == nil && create {
		inst = &instance{
			id:         id,
			executions: map[uint64]*execution{},
			history:    map[uint64][]storedEvent{},
			kvStore:    map[string]provider.KVEntry{},
		}
		p.instances[id] = inst
	}
	return inst
}

// latestExecution returns the highest execution id with a record, or 1.
func (inst *instance) latestExecution() uint64 {
	if inst == nil {
		return provider.InitialExecutionID
	}
	return provider.LatestExecution(maps.Keys(inst.executions))
}

// currentRecord returns the current execution's record, or nil.
func (inst *instance) currentRecord() *execution {
	return inst.executions[inst.currentExecution]
}

// hasEvent reports whether execution executionID holds eventID.
func (inst *instance) hasEvent(executionID, eventID uint64) bool {
	if inst == nil {
		return false
	}
	_, found := slices.BinarySearchFunc(inst.history[executionID], eventID, compareEventID)
	return found
}

// appendEvents stores encoded events in event-id order.
func (inst *instance) appendEvents(executionID uint64, events []storedEvent) {
	h := inst.history[executionID]
	for _, e := range events {
		i, _ := slices.BinarySearchFunc(h, e.id, compareEventID)
		h = slices.Insert(h, i, e)
	}
	inst.history[executionID] = h
}

func compareEventID(e storedEvent, id uint64) int {
	switch {
	case e.id < id:
		return -1
	case e.id > id:
		return 1
	}
	return 0
}

// encodeEvents validates events for one execution of inst (batch rules and
// no id already stored) and encodes them.
func encodeEvents(op string, inst *instance, executionID uint64, events []provider.Event) ([]storedEvent, error) {
	if err := provider.ValidateEvents(op, events); err != nil {
		return nil, err
	}
	out := make([]storedEvent, 0, len(events))
	for _, e := range events {
		if inst.hasEvent(executionID, e.EventID) {
			return nil, provider.Permanent(op, provider.ErrDuplicateEvent,
				"event_id %d already exists in execution %d of instance %s", e.EventID, executionID, inst.id)
		}
		data, err := json.Marshal(e)
		if err != nil {
			return nil, provider.Permanent(op, provider.ErrInvalidInput, "encode event %d: %v", e.EventID, err)
		}
		out = append(out, storedEvent{id: e.EventID, data: data})
	}
	return out, nil
}

// decodeEvents decodes stored events, each once: the decoded event is
// kept in stored for later reads, so that a turn of a long history costs
// what its new events cost, not what the whole history does. A failure
// wraps [provider.ErrCorruptData]. Callers hold p.mu.
func decodeEvents(op, instance string, executionID uint64, stored []storedEvent) ([]provider.Event, error) {
	events := make([]provider.Event, 0, len(stored))
	for i := range stored {
		if stored[i].decoded == nil {
			e, err := provider.DecodeStoredEvent(op, instance, executionID, i, stored[i].data)
			if err != nil {
				return nil, err
			}
			stored[i].decoded = &e
		}
		events = append(events, *stored[i].decoded)
	}
	return events, nil
}

// longPoll calls attempt under p.mu until it reports done or fails, waiting
// up to pollTimeout for state changes in between. attempt gets the current
// time in epoch milliseconds and returns the earliest future time (0 for
// none) at which work it skipped could become eligible.
func (p *Provider) longPoll(ctx context.Context, op string, pollTimeout time.Duration,
	attempt func(nowMs int64) (done bool, wakeAtMs int64, err error)) error {
	if err := ctx.Err(); err != nil {
		return provider.Permanent(op, err, "context done: %v", err)
	}
	deadline := time.Now().Add(pollTimeout)
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		p.mu.Lock()
		now := p.nowMs()
		done, wakeAt, err := attempt(now)
		changed := p.changed
		p.mu.Unlock()
		if done || err != nil {
			return err
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return nil
		}
		if wakeAt > now {
			if d := time.Duration(wakeAt-now) * time.Millisecond; d < wait {
				wait = d
			}
		}
		if p.waitHook != nil {
			p.waitHook()
		}
		if timer == nil {
			timer = time.NewTimer(wait)
		} else {
			timer.Reset(wait)
		}
		select {
		case <-changed:
		case <-timer.C:
		case <-ctx.Done():
			return provider.Permanent(op, ctx.Err(), "context done while polling: %v", ctx.Err())
		}
	}
}

// earliest returns the smaller positive of a and b (0 means none).
func earliest(a, b int64) int64 {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}
