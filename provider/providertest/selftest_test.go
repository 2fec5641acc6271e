package providertest_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/provider/memprovider"
	"github.com/duradyn/duradyn/provider/providertest"
)

// The suite tests itself as testing/fstest's tests test TestFS: it runs
// against providers that each break one rule (listed in variants) and must
// fail exactly the tests that check that rule. A failing *testing.T cannot
// be caught in-process, so each variant runs in a child process: the test
// binary runs itself with -test.run selecting TestBrokenProviderChild and
// the variant's categories, and brokenVariantEnv naming the variant; the
// parent reads the child's -test.v output.

// brokenVariantEnv names the variant a child process runs.
const brokenVariantEnv = "PROVIDERTEST_BROKEN_VARIANT"

// variant is one provider the suite runs against in a child process, and
// what the suite must make of it.
type variant struct {
	name string
	// run selects the child's tests below TestBrokenProviderChild, as the
	// levels of -test.run do: "Category|Other" or "Category/Test".
	run string
	// factory makes the variant's factory in the child.
	factory func() providertest.Factory
	// wantFail lists the tests (Category/Test) that must fail; no other
	// may, except those in mayFail: tests that catch the breakage only
	// when the scheduler delays them past a window.
	wantFail, mayFail []string
	// wantSkip lists the tests that must skip; no other may.
	wantSkip []string
}

// memFactory is the factory of a variant that wraps a fresh memprovider.
// The hooks need memprovider's internals, which this package cannot reach,
// so the factory declares them missing.
func memFactory(wrap func(*memprovider.Provider) provider.Provider) func() providertest.Factory {
	return func() providertest.Factory {
		return providertest.Factory{
			NewProvider: func(t *testing.T) provider.Provider { return wrap(memprovider.New()) },
			LockTimeout: time.Second,
			LongPolling: true,
			Lacks:       []providertest.Capability{providertest.CapCorruptHistory, providertest.CapMaxAttemptCount},
		}
	}
}

// listingsConvergence is the Factory.Convergence the lagging-listing
// variants declare.
const listingsConvergence = 300 * time.Millisecond

// variants lists the providers TestSuiteCatchesBrokenProviders runs.
var variants = []variant{
	{
		name: "Healthy",
		run:  "^(Atomicity|CustomStatus|ErrorHandling|InputValidation|KVStore|LockExpiration|LongPolling|Management|PoisonMessage|Prune|QueueSemantics|Sessions|TagFiltering)$",
		factory: memFactory(func(p *memprovider.Provider) provider.Provider {
			return healthy{p}
		}),
		wantSkip: []string{
			"ErrorHandling/ReadCorruptedHistoryReturnsError", "ErrorHandling/ReadWithExecutionCorruptedHistoryReturnsError",
			"LongPolling/ShortPollReturnsImmediately", "LongPolling/ShortPollWorkItemReturnsImmediately",
		},
	},
	{
		name: "HealthyShortPolling",
		run:  "^LongPolling$",
		factory: func() providertest.Factory {
			f := memFactory(func(p *memprovider.Provider) provider.Provider { return shortPolling{p} })()
			f.LongPolling = false
			return f
		},
		wantSkip: []string{"LongPolling/LongPollWaitsForTimeout", "LongPolling/LongPollWorkItemWaitsForTimeout"},
	},
	{
		name: "ShortPollerThatWaits",
		run:  "^LongPolling$",
		factory: func() providertest.Factory {
			f := memFactory(func(p *memprovider.Provider) provider.Provider { return healthy{p} })()
			f.LongPolling = false
			return f
		},
		wantFail: []string{"LongPolling/ShortPollReturnsImmediately", "LongPolling/ShortPollWorkItemReturnsImmediately"},
		wantSkip: []string{"LongPolling/LongPollWaitsForTimeout", "LongPolling/LongPollWorkItemWaitsForTimeout"},
	},
	{
		name: "StallingScheduler",
		run:  "^(LockExpiration|QueueSemantics|Sessions)$",
		factory: func() providertest.Factory {
			f := memFactory(nil)()
			s := &stalls{instances: map[string]bool{}}
			f.NewProvider = func(t *testing.T) provider.Provider { return newStallingScheduler(s) }
			return f
		},
	},
	{
		name: "FiresTimersAtOnce",
		run:  "^QueueSemantics$",
		factory: memFactory(func(p *memprovider.Provider) provider.Provider {
			return firesTimersAtOnce{p}
		}),
		wantFail: []string{"QueueSemantics/TimerFromAckInvisibleUntilFireAt"},
	},
	{
		name: "HonoursTenthOfEnqueueDelay",
		run:  "^QueueSemantics$",
		factory: memFactory(func(p *memprovider.Provider) provider.Provider {
			return honoursTenthOfEnqueueDelay{p}
		}),
		wantFail: []string{"QueueSemantics/TimerDelayedVisibility"},
	},
	{
		name: "IgnoresWorkerAbandonDelay",
		run:  "^(LockExpiration|QueueSemantics)$",
		factory: memFactory(func(p *memprovider.Provider) provider.Provider {
			return ignoresWorkerAbandonDelay{p}
		}),
		wantFail: []string{"LockExpiration/AbandonWorkItemWithDelay", "QueueSemantics/WorkerDelayedVisibilitySkipsFutureItems"},
	},
	{
		name: "IgnoresOrchestrationAbandonDelay",
		run:  "^(LockExpiration|PoisonMessage)$",
		factory: memFactory(func(p *memprovider.Provider) provider.Provider {
			return ignoresOrchestrationAbandonDelay{p}
		}),
		wantFail: []string{"LockExpiration/AbandonOrchestrationItemWithDelay"},
	},
	{
		name: "ExpiresOrchestrationLocksAtHalf",
		run:  "^LockExpiration$",
		factory: memFactory(func(p *memprovider.Provider) provider.Provider {
			return expiresOrchestrationLocksAtHalf{p}
		}),
		wantFail: []string{"LockExpiration/OrchestrationLockHeldLateInLease", "LockExpiration/OrchestrationLockRenewalExtendsLock"},
		// Its last fetcher probes at 40% of the lock; a delay of a tenth
		// of the lock carries it past the halved lock's end.
		mayFail: []string{"LockExpiration/ConcurrentLockAttemptsRespectExpiration"},
	},
	{
		name: "RenewAlwaysFails",
		run:  "^LockExpiration$",
		factory: memFactory(func(p *memprovider.Provider) provider.Provider {
			return renewAlwaysFails{p}
		}),
		wantFail: []string{"LockExpiration/OrchestrationLockRenewalExtendsLock"},
	},
	{
		name: "RenewDoesNotExtend",
		run:  "^LockExpiration$",
		factory: func() providertest.Factory {
			f := memFactory(nil)()
			f.NewProvider = func(t *testing.T) provider.Provider { return newRenewDoesNotExtend() }
			return f
		},
		wantFail: []string{"LockExpiration/OrchestrationLockRenewalExtendsLock"},
	},
	{
		name: "KeepsClearedStoreRows",
		run:  "^KVStore$",
		factory: func() providertest.Factory {
			f := memFactory(nil)()
			f.NewProvider = func(t *testing.T) provider.Provider { return newKeepsClearedStoreRows(false) }
			return f
		},
		wantFail: []string{"KVStore/KVClearInNextExecutionDeletesStoredKey", "KVStore/KVClearAllInNextExecutionDeletesStoredKeys"},
	},
	{
		name: "KeepsClearedStoreRowsAndReplaysSets",
		run:  "^KVStore$",
		factory: func() providertest.Factory {
			f := memFactory(nil)()
			f.NewProvider = func(t *testing.T) provider.Provider { return newKeepsClearedStoreRows(true) }
			return f
		},
		wantFail: []string{
			"KVStore/KVSnapshotAfterClearSingle",
			"KVStore/KVClearInNextExecutionDeletesStoredKey", "KVStore/KVClearAllInNextExecutionDeletesStoredKeys",
			"KVStore/KVSnapshotAfterClearAllCompleted",
		},
	},
	{
		// Listings lag within the declared bound: the awaited checks pass.
		name: "ListingsLagWithinConvergence",
		run:  "^Management$",
		factory: func() providertest.Factory {
			f := memFactory(nil)()
			f.NewProvider = func(t *testing.T) provider.Provider { return newLagsListings(listingsConvergence / 2) }
			f.Convergence = listingsConvergence
			return f
		},
	},
	{
		// Listings lag three times the declared bound: every check of a
		// listing right after a write fails, although it awaits the bound.
		name: "ListingsLagBeyondConvergence",
		run:  "^Management$",
		factory: func() providertest.Factory {
			f := memFactory(nil)()
			f.NewProvider = func(t *testing.T) provider.Provider { return newLagsListings(3 * listingsConvergence) }
			f.Convergence = listingsConvergence
			return f
		},
		wantFail: []string{
			"Management/ListInstances", "Management/ListInstancesByStatus",
			"Management/GetSystemMetrics", "Management/GetQueueDepths", "Management/PendingInstance",
		},
	},
	{
		name: "AdminReadsFirstExecution",
		run:  "^(Management|MultiExecution)$",
		factory: memFactory(func(p *memprovider.Provider) provider.Provider {
			return readsFirstExecution{p}
		}),
		wantFail: []string{"Management/AdminHistoryReads"},
	},
	{
		name: "CollapsesSessionOwners",
		run:  "^(InputValidation|Sessions)$",
		factory: memFactory(func(p *memprovider.Provider) provider.Provider {
			return collapsesSessionOwners{p}
		}),
		wantFail: []string{"InputValidation/HostileTagsAndSessionsStayDistinct"},
	},
	{
		name: "DropsAdmin",
		run:  "^(Atomicity|Prune)$",
		factory: memFactory(func(p *memprovider.Provider) provider.Provider {
			return withoutAdmin{p}
		}),
		wantFail: []string{
			"Atomicity/AtomicityFailureRollback",
			"Prune/PruneOptionsCombinations", "Prune/PruneSafety", "Prune/PruneBulk", "Prune/PruneBulkIncludesRunningInstances",
		},
	},
	{
		name: "DropsAdminDeclared",
		run:  "^(Atomicity|Prune)$",
		factory: func() providertest.Factory {
			f := memFactory(func(p *memprovider.Provider) provider.Provider { return withoutAdmin{p} })()
			f.Lacks = append(f.Lacks, providertest.CapAdmin)
			return f
		},
		wantSkip: []string{"Prune/PruneOptionsCombinations", "Prune/PruneSafety", "Prune/PruneBulk", "Prune/PruneBulkIncludesRunningInstances"},
	},
	{
		name: "DeclaresAdminMissingButHasIt",
		run:  "^Prune$",
		factory: func() providertest.Factory {
			f := memFactory(func(p *memprovider.Provider) provider.Provider { return healthy{p} })()
			f.Lacks = append(f.Lacks, providertest.CapAdmin)
			return f
		},
		wantFail: []string{"Prune/PruneOptionsCombinations", "Prune/PruneSafety", "Prune/PruneBulk", "Prune/PruneBulkIncludesRunningInstances"},
	},
	{
		name: "DoesNothing",
		run: "^(CustomStatus|ErrorHandling|KVStore|LongPolling|Management|Sessions|TagFiltering)$/" +
			"^(CustomStatusNonexistentInstance|MissingInstanceMetadata|CorruptedSerializationData|KVGetUnknownInstance|" +
			"FetchRespectsTimeoutUpperBound|ShortPollReturnsImmediately|ShortPollWorkItemReturnsImmediately|" +
			"GetInstanceStatsNonexistent|RenewSessionLockNoSessions|NoneFilterReturnsNothing)$",
		factory: func() providertest.Factory {
			return providertest.Factory{
				NewProvider: func(t *testing.T) provider.Provider { return doesNothing{} },
				LockTimeout: time.Second,
				Lacks:       []providertest.Capability{providertest.CapAdmin, providertest.CapCorruptHistory, providertest.CapMaxAttemptCount},
			}
		},
		wantFail: []string{
			"CustomStatus/CustomStatusNonexistentInstance",
			"ErrorHandling/MissingInstanceMetadata", "ErrorHandling/CorruptedSerializationData",
			"KVStore/KVGetUnknownInstance",
			"LongPolling/FetchRespectsTimeoutUpperBound", "LongPolling/ShortPollReturnsImmediately", "LongPolling/ShortPollWorkItemReturnsImmediately",
			"Management/GetInstanceStatsNonexistent",
			"Sessions/RenewSessionLockNoSessions",
			"TagFiltering/NoneFilterReturnsNothing",
		},
	},
}

// TestBrokenProviderChild runs the suite against the variant named by
// brokenVariantEnv. It runs only as a child of
// TestSuiteCatchesBrokenProviders.
func TestBrokenProviderChild(t *testing.T) {
	name := os.Getenv(brokenVariantEnv)
	if name == "" {
		t.Skip("runs only as a child process of TestSuiteCatchesBrokenProviders")
	}
	i := slices.IndexFunc(variants, func(v variant) bool { return v.name == name })
	if i < 0 {
		t.Fatalf("unknown variant %q", name)
	}
	providertest.Run(t, variants[i].factory())
}

// childResult is what one child process reported.
type childResult struct {
	output string
	err    error
	// results maps Category/Test to PASS, FAIL or SKIP.
	results map[string]string
}

// leafResult matches the result line of a conformance test in -test.v
// output.
var leafResult = regexp.MustCompile(`(?m)^\s*--- (PASS|FAIL|SKIP): TestBrokenProviderChild/([^/\s]+/[^/\s]+) \(`)

// runChild runs variant v in a child process.
func runChild(ctx context.Context, v variant) childResult {
	cmd := exec.CommandContext(ctx, os.Args[0],
		"-test.run=^TestBrokenProviderChild$/"+v.run,
		"-test.v", "-test.count=1", "-test.parallel=64", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), brokenVariantEnv+"="+v.name)
	out, err := cmd.CombinedOutput()
	res := childResult{output: string(out), err: err, results: map[string]string{}}
	for _, m := range leafResult.FindAllStringSubmatch(res.output, -1) {
		res.results[m[2]] = m[1]
	}
	return res
}

// TestSuiteCatchesBrokenProviders checks that the suite fails exactly the
// tests that check the rule each broken provider breaks, skips exactly what
// its factory declares missing, and passes the rest, and that it passes a
// healthy wrapper throughout. The children run at the same time, a few at
// once; each runs only the categories its variant concerns.
func TestSuiteCatchesBrokenProviders(t *testing.T) {
	if os.Getenv(brokenVariantEnv) != "" {
		t.Skip("child process")
	}
	results := make([]childResult, len(variants))
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for i, v := range variants {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			results[i] = runChild(t.Context(), v)
		})
	}
	wg.Wait()

	for i, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			res := results[i]
			if len(res.results) == 0 {
				t.Fatalf("the child ran no conformance test (%v):\n%s", res.err, res.output)
			}
			var failed, skipped []string
			for name, outcome := range res.results {
				switch outcome {
				case "FAIL":
					failed = append(failed, name)
				case "SKIP":
					skipped = append(skipped, name)
				}
			}
			slices.Sort(failed)
			var unexpected []string
			for _, name := range failed {
				if !slices.Contains(v.wantFail, name) && !slices.Contains(v.mayFail, name) {
					unexpected = append(unexpected, name)
				}
			}
			var missed []string
			for _, name := range v.wantFail {
				if res.results[name] != "FAIL" {
					missed = append(missed, fmt.Sprintf("%s (%s)", name, cmp.Or(res.results[name], "did not run")))
				}
			}
			if len(unexpected) > 0 || len(missed) > 0 {
				t.Errorf("failed %q\nunexpected failures: %q\nwanted failures that did not happen: %q\nchild output:\n%s",
					failed, unexpected, missed, tail(res.output, 200))
			}
			if (len(failed) > 0) != (res.err != nil) {
				t.Errorf("the child's exit (%v) does not match its %d failed tests", res.err, len(failed))
			}
			slices.Sort(skipped)
			want := slices.Sorted(slices.Values(v.wantSkip))
			if !slices.Equal(skipped, want) {
				t.Errorf("skipped %q, want %q", skipped, want)
			}
		})
	}
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
