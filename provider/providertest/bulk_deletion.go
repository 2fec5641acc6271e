package providertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/duradyn/duradyn/provider"
)

// bulkDeletionTests returns the BulkDeletion category.
func bulkDeletionTests() []testCase {
	return []testCase{
		{"DeleteInstanceBulkFilterCombinations", bulkDeletionFilterCombinations},
		{"DeleteInstanceBulkSafetyAndLimits", bulkDeletionSafetyAndLimits},
		{"DeleteInstanceBulkCompletedBeforeFilter", bulkDeletionCompletedBeforeFilter},
		{"DeleteInstanceBulkCascadesToChildren", bulkDeletionCascadesToChildren},
	}
}

// bulkDeletionDelete runs DeleteInstanceBulk and fails t on error.
func bulkDeletionDelete(ctx context.Context, t *testing.T, admin provider.Admin, filter provider.InstanceFilter) provider.DeleteInstanceResult {
	t.Helper()
	r, err := admin.DeleteInstanceBulk(ctx, filter)
	must(t, err, fmt.Sprintf("DeleteInstanceBulk(%+v)", filter))
	return r
}

// Bulk deletion selects instances through the provider's listing: under a
// convergence bound each test awaits, before each call, that the listing
// shows what it just created and deleted (see awaitListed).

// bulkDeletionWantGone fails t unless InstanceInfo reports every instance
// in ids as not found.
func bulkDeletionWantGone(ctx context.Context, t *testing.T, admin provider.Admin, ids ...string) {
	t.Helper()
	for _, id := range ids {
		_, err := admin.InstanceInfo(ctx, id)
		wantErr(t, err, provider.ErrNotFound, "InstanceInfo("+id+") of a deleted instance")
	}
}

// bulkDeletionWantPresent fails t unless InstanceInfo finds every instance
// in ids.
func bulkDeletionWantPresent(ctx context.Context, t *testing.T, admin provider.Admin, ids ...string) {
	t.Helper()
	for _, id := range ids {
		_, err := admin.InstanceInfo(ctx, id)
		must(t, err, "InstanceInfo("+id+") of an instance that must survive")
	}
}

// bulkDeletionFilterCombinations checks deleting by ids, by unknown ids and
// with an empty filter (every terminal instance).
func bulkDeletionFilterCombinations(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	admin := s.admin(t, p)

	ids := make([]string, 5)
	for i := range ids {
		ids[i] = fmt.Sprintf("bulk-del-filter-%d", i)
		completeInstance(ctx, t, p, ids[i], "", provider.StatusCompleted)
	}

	awaitListed(ctx, t, admin, ids...)
	r := bulkDeletionDelete(ctx, t, admin, provider.InstanceFilter{InstanceIDs: ids[:2]})
	wantEqual(t, r, provider.DeleteInstanceResult{InstancesDeleted: 2, ExecutionsDeleted: 2, EventsDeleted: 4},
		"DeleteInstanceResult of two completed instances with two events each")
	bulkDeletionWantGone(ctx, t, admin, ids[:2]...)
	bulkDeletionWantPresent(ctx, t, admin, ids[2:]...)

	awaitListed(ctx, t, admin, ids...)
	r = bulkDeletionDelete(ctx, t, admin, provider.InstanceFilter{InstanceIDs: []string{"does-not-exist-1", "does-not-exist-2"}})
	wantEqual(t, r, provider.DeleteInstanceResult{}, "DeleteInstanceResult of unknown ids")
	bulkDeletionWantPresent(ctx, t, admin, ids[2:]...)

	awaitListed(ctx, t, admin, ids...)
	r = bulkDeletionDelete(ctx, t, admin, provider.InstanceFilter{})
	wantEqual(t, r.InstancesDeleted, uint64(3), "InstancesDeleted by an empty filter")
	bulkDeletionWantGone(ctx, t, admin, ids...)
}

// bulkDeletionSafetyAndLimits checks that running instances are skipped and
// that Limit caps each call, so repeated calls delete in batches.
func bulkDeletionSafetyAndLimits(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	admin := s.admin(t, p)

	completed := []string{"bulk-del-safe-completed-1", "bulk-del-safe-completed-2"}
	running := []string{"bulk-del-safe-running-1", "bulk-del-safe-running-2"}
	for _, id := range completed {
		completeInstance(ctx, t, p, id, "", provider.StatusCompleted)
	}
	for _, id := range running {
		createInstance(ctx, t, p, id)
	}

	listed := append(append([]string{}, completed...), running...)
	awaitListed(ctx, t, admin, listed...)
	r := bulkDeletionDelete(ctx, t, admin, provider.InstanceFilter{InstanceIDs: listed})
	wantEqual(t, r.InstancesDeleted, uint64(2), "InstancesDeleted when half the listed instances run")
	bulkDeletionWantGone(ctx, t, admin, completed...)
	bulkDeletionWantPresent(ctx, t, admin, running...)

	for i := range 4 {
		id := fmt.Sprintf("bulk-del-batch-%d", i)
		completeInstance(ctx, t, p, id, "", provider.StatusCompleted)
		listed = append(listed, id)
	}
	for i, want := range []uint64{2, 2, 0} {
		// Each batch selects through the listing, which must show the
		// previous batch's deletions as well as the new instances.
		awaitListed(ctx, t, admin, listed...)
		r = bulkDeletionDelete(ctx, t, admin, provider.InstanceFilter{Limit: 2})
		wantEqual(t, r.InstancesDeleted, want, fmt.Sprintf("InstancesDeleted by batch %d with Limit=2", i+1))
	}
	bulkDeletionWantGone(ctx, t, admin, "bulk-del-batch-0", "bulk-del-batch-1", "bulk-del-batch-2", "bulk-del-batch-3")
	bulkDeletionWantPresent(ctx, t, admin, running...)
}

// bulkDeletionCompletedBeforeFilter checks that CompletedBefore, combined
// with ids, keeps instances completed at or after the cutoff and deletes
// those completed before it.
func bulkDeletionCompletedBeforeFilter(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	admin := s.admin(t, p)

	ids := []string{"bulk-del-time-1", "bulk-del-time-2"}
	beforeCreation := time.UnixMilli(time.Now().UnixMilli())
	sleepPast(ctx, t, pruneClockGap)
	for _, id := range ids {
		completeInstance(ctx, t, p, id, "", provider.StatusCompleted)
	}
	afterCreation := pruneCutoff(ctx, t)

	awaitListed(ctx, t, admin, ids...)
	r := bulkDeletionDelete(ctx, t, admin, provider.InstanceFilter{InstanceIDs: ids, CompletedBefore: beforeCreation})
	wantEqual(t, r.InstancesDeleted, uint64(0), "InstancesDeleted with a cutoff before the completions")
	bulkDeletionWantPresent(ctx, t, admin, ids...)

	awaitListed(ctx, t, admin, ids...)
	r = bulkDeletionDelete(ctx, t, admin, provider.InstanceFilter{InstanceIDs: ids, CompletedBefore: afterCreation})
	wantEqual(t, r.InstancesDeleted, uint64(2), "InstancesDeleted with a cutoff after the completions")
	bulkDeletionWantGone(ctx, t, admin, ids...)
}

// bulkDeletionCascadesToChildren checks that deleting roots in one call
// also deletes all their children.
func bulkDeletionCascadesToChildren(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	admin := s.admin(t, p)

	const (
		parent1    = "bulk-del-cascade-parent1"
		child1     = "bulk-del-cascade-child1"
		parent2    = "bulk-del-cascade-parent2"
		child2a    = "bulk-del-cascade-child2a"
		child2b    = "bulk-del-cascade-child2b"
		child2c    = "bulk-del-cascade-child2c"
		standalone = "bulk-del-cascade-standalone"
	)
	completeInstance(ctx, t, p, parent1, "", provider.StatusCompleted)
	completeInstance(ctx, t, p, child1, parent1, provider.StatusCompleted)
	completeInstance(ctx, t, p, parent2, "", provider.StatusCompleted)
	for _, child := range []string{child2a, child2b, child2c} {
		completeInstance(ctx, t, p, child, parent2, provider.StatusCompleted)
	}
	completeInstance(ctx, t, p, standalone, "", provider.StatusCompleted)
	all := []string{parent1, child1, parent2, child2a, child2b, child2c, standalone}
	bulkDeletionWantPresent(ctx, t, admin, all...)

	awaitListed(ctx, t, admin, all...)
	r := bulkDeletionDelete(ctx, t, admin, provider.InstanceFilter{InstanceIDs: []string{parent1, parent2, standalone}})
	wantEqual(t, r.InstancesDeleted, uint64(7), "InstancesDeleted: three roots, one child of parent1, three of parent2")
	bulkDeletionWantGone(ctx, t, admin, all...)
}
