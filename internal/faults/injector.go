package faults

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/duradyn/duradyn/tables"
)

// Options configures an [Injector].
type Options struct {
	// Now is the injector's clock: it dates the snapshots of lagging
	// indexes and decides how old they are. Default [time.Now]; a
	// [Clock]'s Now makes index lag deterministic.
	Now func() time.Time

	// Schema is the shape of the tables the wrapped clients use: its key
	// attributes identify items for real conflicts, its indexes are the
	// ones [Injector.SetIndexLag] can make lag. Default [tables.Default].
	Schema tables.Schema
}

// Injector decides which requests fail and how, for every client it wraps
// ([Injector.DynamoDB], [Injector.SQS]). Share one Injector among all the
// clients of a test, so that real conflicts between them are detected,
// duplicates are delivered to any of them and [Injector.Stats] adds up.
// An Injector is safe for concurrent use.
type Injector struct {
	o Options

	mu            sync.Mutex
	rng           *rand.Rand // guarded by mu
	rules         []*rule    // copied on write: readers may keep a slice
	enabled       bool
	realConflicts bool
	stats         counters
	inflight      map[string]*flight            // item key -> writes in flight
	lag           map[string]lagRange           // index name -> its lag
	snapshots     map[string][]snapshot         // partition -> snapshots, oldest first
	duplicates    map[string][]sqstypes.Message // queue URL -> messages to deliver again
}

// New returns an enabled injector with no rules, whose random choices (of
// [Rule.Rate], random transaction indexes and index lags) are drawn from
// a PCG generator seeded with seed: the same seed and the same sequence of
// requests give the same faults. Concurrent requests reach the generator in
// no fixed order, so only a sequential test is fully reproducible.
func New(seed int64, optFns ...func(*Options)) *Injector {
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Schema.PartitionKey.Name == "" {
		o.Schema = tables.Default()
	}
	return &Injector{
		o:       o,
		rng:     rand.New(rand.NewPCG(uint64(seed), uint64(seed)^0x9e3779b97f4a7c15)),
		enabled: true,
	}
}

// Rule picks requests and the fault they meet.
type Rule struct {
	// Ops are the operation names the rule applies to (OpPutItem, ...,
	// the SDK's names); empty means every operation.
	Ops []string
	// Match, when set, further selects requests: it sees the operation
	// name and the input (for example to pick a key, a table, an index or
	// a condition expression). It may be called concurrently, for requests
	// the rule ends up not firing on too.
	Match func(Request) bool
	// Rate is the probability that the rule fires on a request it
	// selects, in (0, 1]; 1 fires on every one.
	Rate float64
	// Count is how many times the rule fires at most; 0 means no limit.
	// It holds exactly, also under concurrency.
	Count int
	// Fault is what the requests it fires on meet.
	Fault Fault
}

// Request is what [Rule.Match] sees of a request.
type Request struct {
	// Op is the operation name, such as [OpTransactWriteItems].
	Op string
	// Input is the request's input, such as a
	// *dynamodb.TransactWriteItemsInput. Match must not modify it.
	Input any
}

// rule is an added [Rule] and its state, guarded by the injector's mutex.
type rule struct {
	Rule
	fired   int
	removed bool
}

// Add adds r after the rules already added and returns a function that
// removes it (calling it again does nothing). For each request, rules are
// evaluated in the order they were added and the first that fires wins.
//
// Add panics when r is a programming error: an unknown operation name, a
// Rate outside (0, 1], a negative Count, a nil Fault, or a fault that
// cannot apply to the operations named ([TransactionCanceled] on anything
// but TransactWriteItems, [Duplicate] on anything but ReceiveMessage).
func (in *Injector) Add(r Rule) (remove func()) {
	if err := r.validate(); err != nil {
		panic(fmt.Sprintf("faults: Add: %v", err))
	}
	ru := &rule{Rule: r}
	ru.Ops = slices.Clone(r.Ops)
	in.mu.Lock()
	defer in.mu.Unlock()
	in.rules = append(slices.Clip(in.rules), ru)
	return func() {
		in.mu.Lock()
		defer in.mu.Unlock()
		if ru.removed {
			return
		}
		ru.removed = true
		in.rules = slices.DeleteFunc(slices.Clone(in.rules), func(x *rule) bool { return x == ru })
	}
}

func (r Rule) validate() error {
	for _, op := range r.Ops {
		if _, ok := serviceOf[op]; !ok {
			return fmt.Errorf("unknown operation %q", op)
		}
	}
	if !(r.Rate > 0 && r.Rate <= 1) {
		return fmt.Errorf("rate %v outside (0, 1]", r.Rate)
	}
	if r.Count < 0 {
		return fmt.Errorf("negative count %d", r.Count)
	}
	if r.Fault == nil {
		return errors.New("no fault")
	}
	if err := r.Fault.check(r.Ops); err != nil {
		return fmt.Errorf("%v: %w", r.Fault, err)
	}
	return nil
}

// SetEnabled turns the injector on or off. Off, the wrappers pass every
// request through untouched (no rules, conflicts, lag or duplicates) and
// count nothing: useful around a test's set-up and final checks. New
// injectors are on.
func (in *Injector) SetEnabled(on bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.enabled = on
}

// Stats returns what the injector has counted so far.
func (in *Injector) Stats() Stats {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.stats.snapshot()
}

// decide counts a request and picks the fault it meets: nil for none.
// active is false when the injector is off.
func (in *Injector) decide(req Request) (f Fault, active bool) {
	in.mu.Lock()
	if !in.enabled {
		in.mu.Unlock()
		return nil, false
	}
	in.stats.request(req.Op)
	rules := in.rules
	in.mu.Unlock()

	// Match is the caller's code: run it without the lock.
	selected := make([]bool, len(rules))
	for i, r := range rules {
		selected[i] = (len(r.Ops) == 0 || slices.Contains(r.Ops, req.Op)) && (r.Match == nil || r.Match(req))
	}

	in.mu.Lock()
	defer in.mu.Unlock()
	for i, r := range rules {
		if !selected[i] || r.removed || (r.Count > 0 && r.fired >= r.Count) {
			continue
		}
		if r.Rate < 1 && in.rng.Float64() >= r.Rate {
			continue
		}
		r.fired++
		if r.Fault.Kind() != KindDuplicate { // counted per message delivered
			in.stats.fault(req.Op, r.Fault.Kind(), 1)
		}
		return r.Fault, true
	}
	return nil, true
}

// countFault adds n faults of kind k met by op.
func (in *Injector) countFault(op string, k Kind, n int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.stats.fault(op, k, int64(n))
}
