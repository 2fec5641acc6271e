package crashsoak

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/duradyn/duradyn/durable"
)

// Config is a soak: Rounds rounds, in each of which a fresh victim holding
// Hold is killed beside Survivors processes that run the whole soak.
type Config struct {
	// Binary is the worker command (Build).
	Binary string
	// Store is the table and queues, empty (NewStore).
	Store Store
	// Survivors is how many processes take the victims' work; at least 1.
	Survivors int
	// Rounds is how many victims are killed at most.
	Rounds int
	// MinItems ends the soak before Rounds once the victims held this many
	// items when killed (Result.Recoveries); 0 runs every round.
	MinItems int
	// Hold is what each victim holds when it is killed (as much of it as
	// it gets within a minute).
	Hold Hold
	// Logf receives progress; nil discards it.
	Logf func(format string, args ...any)
}

// Item is one piece of work a victim held when it was killed.
type Item struct {
	Round int
	Kind  string // KindActivity, KindTurn or KindHanded
	Key   string // the instance (a turn), or "<instance>#<activity id>"
	// Recovery is from the kill to another process's fetch returning the
	// work; 0 when Lost or Early.
	Recovery time.Duration
	// Lost is set when no other process fetched the work within
	// recoveryTimeout of the kill.
	Lost bool
	// Released is set when the victim no longer held the work when it was
	// killed: it had lost the lease (its renewals went unanswered too long,
	// on a loaded machine), and the work went on without it. Such an item
	// has no recovery time.
	Released bool
}

// Result is what a soak measured.
type Result struct {
	Items []Item
	// Instances is how many instances the soak started, all completed.
	Instances int
}

// Recoveries are the recovery times of the items held at the kill and
// taken over.
func (r Result) Recoveries() []time.Duration {
	var out []time.Duration
	for _, it := range r.Items {
		if !it.Lost && !it.Released {
			out = append(out, it.Recovery)
		}
	}
	return out
}

// Held counts the items of each kind.
func (r Result) Held() map[string]int {
	n := map[string]int{}
	for _, it := range r.Items {
		n[it.Kind]++
	}
	return n
}

// Timeouts of a round.
const (
	readyTimeout    = 2 * time.Minute
	holdTimeout     = 30 * time.Second
	recoveryTimeout = time.Minute
	finishTimeout   = 3 * time.Minute
)

// Build builds the worker command into dir and returns its path; race
// builds it with the race detector.
func Build(ctx context.Context, dir string, race bool) (string, error) {
	bin := filepath.Join(dir, "crashworker")
	args := []string{"build", "-o", bin}
	if race {
		args = append(args, "-race")
	}
	args = append(args, "github.com/duradyn/duradyn/internal/cmd/crashworker")
	out, err := exec.CommandContext(ctx, "go", args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("crashsoak: go build: %w\n%s", err, out)
	}
	return bin, nil
}

// soak is one Run.
type soak struct {
	c      Config
	client *durable.Client
	log    *eventLog
	logf   func(format string, args ...any)
}

// Run runs the soak of c and returns every item the victims held, with
// its recovery time. It fails when a process could not be started or
// stopped, when a data race was reported in one, or when an instance it
// started did not complete; lost items are reported in the result.
func Run(ctx context.Context, c Config) (res Result, err error) {
	if c.Survivors < 1 || c.Rounds < 1 {
		return res, fmt.Errorf("crashsoak: %d survivors and %d rounds: want at least 1 of each", c.Survivors, c.Rounds)
	}
	s := &soak{c: c, log: newEventLog(), logf: c.Logf}
	if s.logf == nil {
		s.logf = func(string, ...any) {}
	}
	dp, err := c.Store.provider(ctx, nil, nil)
	if err != nil {
		return res, err
	}
	defer dp.Close()
	s.client = durable.NewClient(dp)
	var procs []*process
	defer func() {
		for _, p := range procs {
			err = errors.Join(err, p.stop(time.Minute))
			if r := p.races(); r != "" {
				err = errors.Join(err, fmt.Errorf("crashsoak: data race in %s:\n%s", p.name, r))
			}
		}
	}()
	for i := range c.Survivors {
		p, err := s.start(fmt.Sprintf("survivor-%d", i+1), WorkerConfig{Store: c.Store})
		if err != nil {
			return res, err
		}
		procs = append(procs, p)
	}
	for r := 0; r < c.Rounds && (r == 0 || c.MinItems == 0 || len(res.Recoveries()) < c.MinItems); r++ {
		items, started, err := s.round(ctx, r)
		res.Items = append(res.Items, items...)
		res.Instances += started
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// start starts a worker process and waits until its runtime runs.
func (s *soak) start(name string, wc WorkerConfig) (*process, error) {
	p, err := startProcess(s.c.Binary, name, wc, s.log.add)
	if err != nil {
		return nil, err
	}
	if err := s.log.waitFor(readyTimeout, p.exited, func() bool { return s.log.isReady(name) }); err != nil {
		_ = p.kill()
		return nil, fmt.Errorf("crashsoak: %s not ready: %w\n%s", name, err, p.stderr)
	}
	return p, nil
}

// round starts a victim, gives it work until it holds what it should,
// kills it, and times the recovery of each item it held. started is how
// many instances the round started; all of them must complete.
func (s *soak) round(ctx context.Context, r int) (items []Item, started int, err error) {
	h := s.c.Hold
	name := fmt.Sprintf("victim-%d", r+1)
	v, err := s.start(name, WorkerConfig{Store: s.c.Store, Hold: h,
		OrchestrationConcurrency: h.Turns + 2, WorkerConcurrency: h.Activities + h.Handed + 2})
	if err != nil {
		return nil, 0, err
	}
	var ids []string
	defer func() {
		if race := v.races(); race != "" {
			err = errors.Join(err, fmt.Errorf("crashsoak: data race in %s:\n%s", name, race))
		}
	}()
	short := func(kind string, want int) func() int {
		return func() int { return max(want-s.log.held(name, kind), 0) }
	}
	ids, err = s.load(ctx, r, name, ids, []loadKind{
		{func(n int) (string, error) { return s.startOne(ctx, r, n, "acts", recActs) }, short(KindActivity, h.Activities)},
		{func(n int) (string, error) { return s.startOne(ctx, r, n, "turn", recTurn) }, short(KindTurn, h.Turns)},
	}, func() bool { return short(KindActivity, h.Activities)() == 0 && short(KindTurn, h.Turns)() == 0 })
	if err == nil {
		// Last, so that the victim is killed a moment after the hand-off:
		// a handed activity that never started has no renewal.
		ids, err = s.load(ctx, r, name, ids, []loadKind{
			{func(n int) (string, error) { return s.startOne(ctx, r, n, "chain", recChain) }, short(KindHanded, h.Handed)},
		}, func() bool { return short(KindHanded, h.Handed)() == 0 })
	}
	if err != nil {
		_ = v.kill()
		return nil, len(ids), err
	}
	killed := time.Now()
	if err := v.kill(); err != nil {
		return nil, len(ids), err
	}
	items = s.recoveries(r, name, killed)
	s.logf("round %d: killed %s holding %d items; %s; fetches %v", r+1, name, len(items), summarize(items), s.log.picksBy(fmt.Sprintf("r%02d-", r)))
	for _, it := range items {
		s.logf("round %d: %s %s: recovered in %v (lost %t, released %t); its fetches: %s", r+1, it.Kind, it.Key,
			it.Recovery.Round(time.Millisecond), it.Lost, it.Released, s.log.picksOf(it.Key, killed))
	}
	return items, len(ids), s.finish(ctx, ids)
}

// startOne starts instance n of orchestration o in round r, named after
// kind.
func (s *soak) startOne(ctx context.Context, r, n int, kind string, o durable.Orchestration[int, int]) (string, error) {
	id := instanceID(r, kind, n)
	if err := o.Start(ctx, s.client, id, n); err != nil {
		return "", fmt.Errorf("crashsoak: start %s: %w", id, err)
	}
	return id, nil
}

// load starts instances until done reports the victim holds enough, or
// holdTimeout passes (the victim then holds less: SQS hands each start to
// any process). Each second it starts, for each kind of instance (start,
// and also when set) whose work the victim still lacks (short reports
// how much), twice that many. It returns ids with the instances started
// appended.
func (s *soak) load(ctx context.Context, r int, victim string, ids []string, kinds []loadKind, done func() bool) ([]string, error) {
	deadline := time.Now().Add(holdTimeout)
	for n := len(ids); !done() && time.Now().Before(deadline); {
		for _, k := range kinds {
			for range 2 * k.short() {
				id, err := k.start(n)
				if err != nil {
					return ids, err
				}
				ids = append(ids, id)
				n++
			}
		}
		_ = s.log.waitFor(time.Second, nil, done)
	}
	if !done() {
		s.logf("round %d: %s holds less than asked after %v", r+1, victim, holdTimeout)
	}
	return ids, ctx.Err()
}

// loadKind is a kind of instance load starts: start starts the n-th, and
// short is how much of the work it makes the victim still lacks.
type loadKind struct {
	start func(n int) (string, error)
	short func() int
}

// recoveries times, for each item the victim held, the first fetch of it by
// another process after the kill.
func (s *soak) recoveries(r int, victim string, killed time.Time) []Item {
	held := s.log.heldBy(victim)
	items := make([]Item, len(held))
	var wg sync.WaitGroup
	for i, ev := range held {
		wg.Go(func() {
			it := Item{Round: r + 1, Kind: ev.kind, Key: ev.key}
			if s.log.releasedBefore(ev, victim, killed) {
				it.Released = true
				items[i] = it
				return
			}
			var at time.Time
			_ = s.log.waitFor(recoveryTimeout, nil, func() bool {
				at = s.log.pickedAfter(ev, victim, killed)
				return !at.IsZero()
			})
			switch {
			case at.IsZero():
				it.Lost = true
			default:
				it.Recovery = at.Sub(killed)
			}
			items[i] = it
		})
	}
	wg.Wait()
	return items
}

// finish waits until every instance of ids has completed.
func (s *soak) finish(ctx context.Context, ids []string) error {
	ctx, cancel := context.WithTimeout(ctx, finishTimeout)
	defer cancel()
	for _, id := range ids {
		st, err := s.client.WaitForCompletion(ctx, id)
		if err != nil {
			return fmt.Errorf("crashsoak: wait for %s: %w", id, err)
		}
		if st.State != durable.StateCompleted {
			return fmt.Errorf("crashsoak: %s ended %s (%v), want Completed", id, st.State, st.Failure)
		}
	}
	return nil
}

// summarize says how many items of each kind were held and the slowest
// recovery.
func summarize(items []Item) string {
	n := map[string]int{}
	var slowest time.Duration
	lost, early := 0, 0
	for _, it := range items {
		n[it.Kind]++
		switch {
		case it.Lost:
			lost++
		case it.Released:
			early++
		}
		slowest = max(slowest, it.Recovery)
	}
	return fmt.Sprintf("%d activities, %d turns, %d handed; slowest recovery %v; %d lost, %d released before the kill",
		n[KindActivity], n[KindTurn], n[KindHanded], slowest.Round(time.Millisecond), lost, early)
}

// Percentile returns the p-th percentile of ds by the nearest rank.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}
