package lockstest_test

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/duradyn/duradyn/locks"
	"github.com/duradyn/duradyn/locks/lockstest"
)

// brokenVariantEnv names the broken locker a child process tests.
const brokenVariantEnv = "LOCKSTEST_BROKEN_VARIANT"

// stealing takes locks whoever holds them.
type stealing struct{ *locks.Memory }

func (s stealing) Acquire(ctx context.Context, key string, ttl time.Duration, optFns ...func(*locks.CallOptions)) (locks.Lease, bool, error) {
	s.Memory.Reset(ctx, key)
	return s.Memory.Acquire(ctx, key, ttl, optFns...)
}

// releasesAnything frees locks it does not hold, or whose lease ended.
type releasesAnything struct{ *locks.Memory }

func (r releasesAnything) Release(ctx context.Context, key string, optFns ...func(*locks.CallOptions)) (bool, error) {
	if ok, err := r.Memory.Release(ctx, key, optFns...); ok || err != nil {
		return ok, err
	}
	r.Memory.Reset(ctx, key)
	return true, nil
}

// fenceBackAfterReset hands out smaller tokens after each Reset, shared by
// the pair through offset.
type fenceBackAfterReset struct {
	*locks.Memory
	offset *atomicOffset
}

type atomicOffset struct {
	mu sync.Mutex
	n  int64
}

func (f fenceBackAfterReset) Reset(ctx context.Context, key string) (bool, error) {
	ok, err := f.Memory.Reset(ctx, key)
	f.offset.mu.Lock()
	f.offset.n -= 100
	f.offset.mu.Unlock()
	return ok, err
}

func (f fenceBackAfterReset) Acquire(ctx context.Context, key string, ttl time.Duration, optFns ...func(*locks.CallOptions)) (locks.Lease, bool, error) {
	lease, ok, err := f.Memory.Acquire(ctx, key, ttl, optFns...)
	if ok {
		f.offset.mu.Lock()
		lease.Fence += 1000 + f.offset.n
		f.offset.mu.Unlock()
	}
	return lease, ok, err
}

// variant is a locker for the suite to check: its name, how it wraps a
// correct one, and the checks it must fail.
type variant struct {
	name     string
	wrap     func(m *locks.Memory, offset *atomicOffset) locks.Locker
	wantFail []string
}

// variants are the broken lockers, and a healthy one.
var variants = []variant{
	{"healthy", func(m *locks.Memory, _ *atomicOffset) locks.Locker { return m }, nil},
	{"stealing", func(m *locks.Memory, _ *atomicOffset) locks.Locker { return stealing{m} },
		[]string{"Semantics/AcquireRelease", "Semantics/NotReentrant", "Contention"}},
	{"releases-anything", func(m *locks.Memory, _ *atomicOffset) locks.Locker { return releasesAnything{m} },
		[]string{"Semantics/AcquireRelease", "Semantics/ExpiredHolderCannotReleaseOrExtend"}},
	{"fence-back-after-reset", func(m *locks.Memory, o *atomicOffset) locks.Locker { return fenceBackAfterReset{m, o} },
		[]string{"Semantics/Reset", "Semantics/FencingIncreases"}},
}

// TestBrokenLockerChild runs the suite against the variant named by
// brokenVariantEnv. It runs only as a child of TestSuiteCatchesBrokenLockers.
func TestBrokenLockerChild(t *testing.T) {
	name := os.Getenv(brokenVariantEnv)
	if name == "" {
		t.Skip("runs only as a child process of TestSuiteCatchesBrokenLockers")
	}
	i := slices.IndexFunc(variants, func(v variant) bool { return v.name == name })
	if i < 0 {
		t.Fatalf("unknown variant %q", name)
	}
	lockstest.Run(t, lockstest.Factory{NewPair: func(t *testing.T, clock locks.Clock) (a, b locks.Locker) {
		store, offset := locks.NewMemoryStore(), &atomicOffset{}
		newLocker := func() locks.Locker {
			m, err := locks.NewMemory(func(o *locks.MemoryOptions) { o.Store, o.Clock = store, clock })
			if err != nil {
				t.Fatal(err)
			}
			return variants[i].wrap(m, offset)
		}
		return newLocker(), newLocker()
	}})
}

// leafResult matches the result line of a check in -test.v output.
var leafResult = regexp.MustCompile(`(?m)^\s*--- (PASS|FAIL|SKIP): TestBrokenLockerChild/(\S+) \(`)

// TestSuiteCatchesBrokenLockers runs the suite in a child process per
// broken locker and checks that the checks of the rule each breaks fail,
// and that a healthy locker passes every check.
func TestSuiteCatchesBrokenLockers(t *testing.T) {
	if os.Getenv(brokenVariantEnv) != "" {
		t.Skip("child process")
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.CommandContext(t.Context(), os.Args[0],
				"-test.run=^TestBrokenLockerChild$", "-test.v", "-test.count=1", "-test.parallel=64", "-test.timeout=2m")
			cmd.Env = append(os.Environ(), brokenVariantEnv+"="+v.name)
			out, err := cmd.CombinedOutput()
			results := map[string]string{}
			for _, m := range leafResult.FindAllStringSubmatch(string(out), -1) {
				results[m[2]] = m[1]
			}
			if len(results) == 0 {
				t.Fatalf("the child ran no check (%v):\n%s", err, out)
			}
			var failed []string
			for name, outcome := range results {
				if outcome != "PASS" {
					failed = append(failed, name)
				}
			}
			slices.Sort(failed)
			for _, name := range v.wantFail {
				if results[name] != "FAIL" {
					t.Errorf("%s: %q; want FAIL", name, results[name])
				}
			}
			if len(v.wantFail) == 0 && (len(failed) > 0 || err != nil) {
				t.Errorf("healthy locker failed %q (%v):\n%s", failed, err, out)
			}
		})
	}
}
