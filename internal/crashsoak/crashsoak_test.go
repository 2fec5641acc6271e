package crashsoak_test

import (
	"slices"
	"testing"
	"time"

	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/internal/crashsoak"
)

// recoveryBound is the product's promise (docs/runtime.md §3, "Crash
// recovery"): with default options, work a process held when it was
// killed is taken up by another within this long, at the 99th percentile.
const recoveryBound = 10 * time.Second

// minItems is how many items the victims must hold when killed for the
// percentile to mean something.
const minItems = 20

// TestKilledProcessesWorkIsTakenOverWithinTenSeconds runs worker processes
// of default lease options on one table and its queues: two survivors for
// the whole test and, round after round, a victim that takes work until it
// holds running activities, turns under way and an activity a turn handed
// to one of its waiting slots, and is then killed with SIGKILL. Each item
// the victim held must be fetched by a survivor within recoveryBound of
// the kill at the 99th percentile (with this many items, the slowest but
// none), and every instance must complete.
func TestKilledProcessesWorkIsTakenOverWithinTenSeconds(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds a worker command and runs and kills worker processes for about two minutes")
	}
	env := dynamotest.NewEnv(t, true)
	// The workers run without the race detector, which slows them several
	// times over: the times measured are the product's (TestCrashRecovery
	// runs killed runtimes under the race detector).
	bin, err := crashsoak.Build(t.Context(), t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	res, err := crashsoak.Run(t.Context(), crashsoak.Config{
		Binary: bin,
		Store: crashsoak.Store{Endpoints: env.Endpoints, Table: env.Table,
			OrchestratorQueueURL: env.OrchestratorQueueURL, WorkerQueueURL: env.WorkerQueueURL},
		Survivors: 2,
		Rounds:    8,
		MinItems:  minItems,
		Hold:      crashsoak.Hold{Activities: 4, Turns: 2, Handed: 1},
		Logf:      t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	held := res.Held()
	t.Logf("%d instances; held %v", res.Instances, held)
	for _, kind := range []string{crashsoak.KindActivity, crashsoak.KindTurn, crashsoak.KindHanded} {
		if held[kind] == 0 {
			t.Errorf("no victim held a %s: the soak did not test its recovery", kind)
		}
	}
	released := 0
	for _, it := range res.Items {
		switch {
		case it.Lost:
			t.Errorf("round %d: %s %s was not taken over within a minute of the kill", it.Round, it.Kind, it.Key)
		case it.Released:
			// The victim's renewals went unanswered too long on a loaded
			// machine, and it let go: the work went on without it, as it
			// should, before the kill.
			released++
		}
	}
	rec := res.Recoveries()
	t.Logf("%d items held at the kill; %d released before it (the victim had lost the lease)", len(rec), released)
	if len(rec) < minItems {
		t.Fatalf("%d items held at the kill, want at least %d", len(rec), minItems)
	}
	p50, p99, slowest := crashsoak.Percentile(rec, 50), crashsoak.Percentile(rec, 99), slices.Max(rec)
	t.Logf("recovery of %d items: p50 %v, p99 %v, max %v", len(rec), p50, p99, slowest)
	if p99 > recoveryBound {
		t.Errorf("p99 recovery %v, want at most %v", p99, recoveryBound)
	}
}
