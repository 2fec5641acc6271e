package main

import (
	"strings"
	"testing"
	"time"

	"github.com/duradyn/duradyn/locks"
	"github.com/duradyn/duradyn/queues"
)

// pastClock is the system clock set back by an offset, for leases that
// have ended whatever the time the test takes.
type pastClock struct {
	locks.SystemClock
	offset time.Duration
}

func (c pastClock) Now() time.Time { return time.Now().Add(-c.offset) }

// locker returns a locker of owner on e's table, as an application opens
// it, closed when t ends.
func (e *testEnv) locker(t *testing.T, owner string, clock locks.Clock) *locks.Dynamo {
	t.Helper()
	locker, err := locks.NewDynamo(e.AWS, func(o *locks.DynamoOptions) {
		o.TableName = e.Table
		o.Client = e.DB
		o.Owner = owner
		o.Clock = clock
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { locker.Close() })
	return locker
}

// acquire takes key for ttl with locker, failing t unless it did.
func acquire(t *testing.T, locker locks.Locker, key string, ttl time.Duration) {
	t.Helper()
	if _, ok, err := locker.Acquire(t.Context(), key, ttl); err != nil || !ok {
		t.Fatalf("acquire %s: %v, %v", key, ok, err)
	}
}

type locksListJSON struct {
	Locks []lockJSON `json:"locks"`
}

func TestLocks(t *testing.T) {
	t.Parallel()
	e := newTableEnv(t)
	signals := e.signalsOn(t)
	a := e.locker(t, "worker-a", nil)
	b := e.locker(t, "worker-b", nil)
	acquire(t, a, "orders", time.Hour)
	acquire(t, b, "billing", time.Hour)
	// A lease that ended an hour ago is not listed.
	acquire(t, e.locker(t, "worker-c", pastClock{offset: 2 * time.Hour}), "stale", time.Hour)

	e.golden(t, "locks_list", e.cli(t, "locks", "list").ok(t).stdout)
	before := time.Now()
	list := decode[locksListJSON](t, e.cli(t, "locks", "list", "--output", "json").ok(t))
	if len(list.Locks) != 2 || list.Locks[0].Key != "billing" || list.Locks[0].Owner != "worker-b" ||
		list.Locks[1].Key != "orders" || list.Locks[1].Owner != "worker-a" {
		t.Fatalf("locks list --output json = %+v", list)
	}
	for _, l := range list.Locks {
		if !l.LeaseEnd.After(before) || l.LeaseEnd.Location() != time.UTC {
			t.Errorf("lock %s: lease end %v; want a UTC time after %v", l.Key, l.LeaseEnd, before)
		}
	}

	// reset frees a held lock whoever holds it, and tells the waiters of
	// other processes.
	e.golden(t, "locks_reset", e.cli(t, "locks", "reset", "orders").ok(t).stdout)
	acquire(t, b, "orders", time.Minute)
	if held, err := a.Release(t.Context(), "orders"); err != nil || held {
		t.Errorf("the reset holder released orders: %v, %v", held, err)
	}
	awaitSignal(t, signals, queues.Lock, func(s queues.Signal) bool { return s.Instance == "orders" })

	r := e.cli(t, "locks", "reset", "billing", "--output", "json").ok(t)
	if got := decode[map[string]any](t, r); got["key"] != "billing" || got["removed"] != true {
		t.Errorf("locks reset --output json = %v", got)
	}

	// A free, expired or unknown lock: nothing to remove, exit 0, nothing
	// written.
	e.unchanged(t, func() {
		e.golden(t, "locks_reset_free", e.cli(t, "locks", "reset", "billing").ok(t).stdout)
		for _, key := range []string{"stale", "never-held"} {
			r := e.cli(t, "locks", "reset", key, "--output", "json").ok(t)
			if got := decode[map[string]any](t, r); got["key"] != key || got["removed"] != false {
				t.Errorf("locks reset %s --output json = %v", key, got)
			}
		}
	})
	list = decode[locksListJSON](t, e.cli(t, "locks", "list", "--output", "json").ok(t))
	if len(list.Locks) != 1 || list.Locks[0].Key != "orders" || list.Locks[0].Owner != "worker-b" {
		t.Errorf("locks list after the resets = %+v; want orders held by worker-b", list)
	}

	// Without a queue the CLI says that waiters elsewhere wake later.
	r = e.cli(t, "DURADYN_ORCHESTRATOR_QUEUE_URL=", "locks", "reset", "orders").ok(t)
	if !strings.Contains(r.stderr, "warning: no --orchestrator-queue-url") {
		t.Errorf("stderr %q: want the queue warning", r.stderr)
	}
}

// TestLocksBadInput: bad arguments give one clear line and a non-zero exit
// code, and write nothing.
func TestLocksBadInput(t *testing.T) {
	t.Parallel()
	e := newTableEnv(t)
	acquire(t, e.locker(t, "worker-a", nil), "orders", time.Hour)
	e.unchanged(t, func() {
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"locks", "reset", strings.Repeat("k", locks.MaxKeyBytes+1)}, "key is 2047 bytes; at most 2046 are allowed"},
			{[]string{"locks", "reset", "bad\xffkey"}, "key is not valid UTF-8"},
			{[]string{"locks", "reset", ""}, "locks reset: empty argument"},
			{[]string{"locks", "reset"}, "locks reset: want <key>, got 0 argument(s) (usage: duradyn locks reset <key>)"},
			{[]string{"locks", "list", "orders"}, "locks list: want no arguments, got 1 argument(s)"},
			{[]string{"locks", "list", "--status", "held"}, "flag provided but not defined: -status"},
			{[]string{"locks", "drop", "orders"}, `locks: unknown operation "drop": want list or reset`},
			{[]string{"locks"}, "locks: want an operation: list or reset"},
		} {
			e.cli(t, c.args...).fails(t, exitUsage, c.want)
		}
	})
}

type clockJSON struct {
	Skew        float64 `json:"skew_seconds"`
	Uncertainty float64 `json:"uncertainty_seconds"`
	MaxSkew     float64 `json:"max_skew_seconds"`
	Beyond      bool    `json:"beyond_max_skew"`
}

// TestClock: on the emulator, which shares this host's clock, clock
// measures a skew within its uncertainty of zero and exits 0, in text and
// JSON; a bad --max-skew is a usage error.
func TestClock(t *testing.T) {
	t.Parallel()
	e := newTableEnv(t)
	out := e.cli(t, "clock").ok(t).stdout
	if !strings.HasPrefix(out, "this host's clock is ") || !strings.Contains(out, "from DynamoDB's (± ") {
		t.Errorf("clock printed %q", out)
	}
	got := decode[clockJSON](t, e.cli(t, "clock", "--output", "json", "--max-skew", "500ms").ok(t))
	if got.Beyond || got.MaxSkew != 0.5 || got.Skew-got.Uncertainty > 0.1 || got.Skew+got.Uncertainty < -0.1 || got.Uncertainty > 1 {
		t.Errorf("clock --output json: %+v, want a skew within its uncertainty of zero, not beyond 0.5 s", got)
	}
	e.cli(t, "clock", "--max-skew", "0").fails(t, exitUsage, "--max-skew 0s is not positive")
}

// TestSkewBeyond: clock's verdict needs the whole interval beyond the
// bound, either way.
func TestSkewBeyond(t *testing.T) {
	for _, tc := range []struct {
		skew, within time.Duration
		want         bool
	}{
		{2 * time.Second, 500 * time.Millisecond, true},
		{1200 * time.Millisecond, 300 * time.Millisecond, false},
		{-2 * time.Second, 500 * time.Millisecond, true},
		{-1200 * time.Millisecond, 300 * time.Millisecond, false},
		{0, 10 * time.Millisecond, false},
	} {
		if got := skewBeyond(tc.skew, tc.within, time.Second); got != tc.want {
			t.Errorf("skewBeyond(%v ± %v, 1s) = %v, want %v", tc.skew, tc.within, got, tc.want)
		}
	}
}
