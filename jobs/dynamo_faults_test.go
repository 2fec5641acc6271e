package jobs_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/duradyn/duradyn/internal/faults"
	"github.com/duradyn/duradyn/jobs"
	"github.com/duradyn/duradyn/tables"
)

// faultyClient sends every request through a fault injector except
// BatchGetItem, which the injector's client does not serve and which goes
// to the emulator directly.
type faultyClient struct {
	faults.DynamoDB
	direct *dynamodb.Client
}

func (c faultyClient) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	return c.direct.BatchGetItem(ctx, in, optFns...)
}

// faultyStore returns a store on env whose requests go through in.
func (env *dynamoEnv) faultyStore(t *testing.T, in *faults.Injector) *jobs.DynamoStore {
	return env.store(t, func(o *jobs.DynamoOptions) {
		o.Client = faultyClient{DynamoDB: in.DynamoDB(env.db), direct: env.db}
	})
}

// A create or compare-and-swap whose response is lost and that is sent
// again reports its own write as applied, although the resend fails its
// condition; another writer's change is still reported as not applied.
func TestDynamoStore_ResentWrites(t *testing.T) {
	t.Parallel()
	env := newDynamoEnv(t)
	in := faults.New(1)
	s := env.faultyStore(t, in)
	ctx := t.Context()
	resendNext := func(op string) {
		in.Add(faults.Rule{Ops: []string{op}, Rate: 1, Count: 1, Fault: faults.Resend()})
	}

	resendNext(faults.OpPutItem)
	next := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	created, err := s.Create(ctx, jobs.Job{ID: "j", NextRunTime: &next})
	if err != nil {
		t.Fatalf("resent Create: %v", err)
	}
	if created.Status != jobs.StatusScheduled {
		t.Fatalf("resent Create returned %+v", created)
	}

	resendNext(faults.OpUpdateItem)
	applied, job, err := s.CompareAndSwap(ctx, "j",
		jobs.Changes{jobs.FieldStatus: jobs.StatusScheduled},
		jobs.Changes{jobs.FieldStatus: jobs.StatusRunning, jobs.FieldLastScheduledTime: next})
	if err != nil || !applied {
		t.Fatalf("resent CompareAndSwap = %v, %v; want applied", applied, err)
	}
	if job.Status != jobs.StatusRunning || job.LastScheduledTime == nil || !job.LastScheduledTime.Equal(next) {
		t.Fatalf("resent CompareAndSwap returned %+v", job)
	}

	// The same expectation again, resent: neither send applies.
	resendNext(faults.OpUpdateItem)
	applied, job, err = s.CompareAndSwap(ctx, "j",
		jobs.Changes{jobs.FieldStatus: jobs.StatusScheduled},
		jobs.Changes{jobs.FieldStatus: jobs.StatusPaused})
	if err != nil || applied || job.Status != jobs.StatusRunning {
		t.Fatalf("stale resent CompareAndSwap = %v, %+v, %v; want not applied, running", applied, job, err)
	}

	// A duplicate create, resent, is still a duplicate.
	resendNext(faults.OpPutItem)
	_, err = s.Create(ctx, jobs.Job{ID: "j"})
	if !errors.Is(err, jobs.ErrJobExists) {
		t.Fatalf("resent duplicate Create: %v, want ErrJobExists", err)
	}
	if got := in.Stats().Ops[faults.OpUpdateItem]; got.Faults[faults.KindResend] != 2 {
		t.Fatalf("stats %+v: want 2 resent UpdateItem requests", got)
	}
}

// A lost response with no resend is an error, never a wrong answer: the
// caller cannot tell whether the write applied, and a read tells it.
func TestDynamoStore_LostResponse(t *testing.T) {
	t.Parallel()
	env := newDynamoEnv(t)
	in := faults.New(1)
	s := env.faultyStore(t, in)
	ctx := t.Context()
	if _, err := s.Create(ctx, jobs.Job{ID: "j"}); err != nil {
		t.Fatalf("Create: %v", err)
	}
	in.Add(faults.Rule{Ops: []string{faults.OpUpdateItem}, Rate: 1, Count: 1, Fault: faults.LostResponse()})
	applied, _, err := s.CompareAndSwap(ctx, "j",
		jobs.Changes{jobs.FieldStatus: jobs.StatusPending},
		jobs.Changes{jobs.FieldStatus: jobs.StatusScheduled})
	if err == nil || applied {
		t.Fatalf("CompareAndSwap with a lost response = %v, %v; want an error", applied, err)
	}
	if errors.Is(err, jobs.ErrJobNotFound) || errors.Is(err, jobs.ErrInvalidJob) {
		t.Fatalf("CompareAndSwap with a lost response: %v, want the transport's error", err)
	}
	job, err := s.Get(ctx, "j")
	if err != nil || job.Status != jobs.StatusScheduled {
		t.Fatalf("Get after the lost response = %+v, %v; want the write applied", job, err)
	}
}

// Queries read the index, which lags; every job returned is read from the
// table and matches the filter as the table holds it.
func TestDynamoStore_IndexLag(t *testing.T) {
	t.Parallel()
	env := newDynamoEnv(t)
	clock := faults.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	in := faults.New(1, func(o *faults.Options) { o.Now = clock.Now })
	in.SetIndexLag(10*time.Second, 10*time.Second, tables.IndexInstances)
	s := env.faultyStore(t, in)
	ctx := t.Context()
	due := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, id := range []string{"a", "b", "c"} {
		if _, err := s.Create(ctx, jobs.Job{ID: id, NextRunTime: &due, Metadata: map[string]string{"k": "v"}}); err != nil {
			t.Fatalf("Create: %v", err)
		}
	}
	filter := jobs.Filter{Status: []jobs.Status{jobs.StatusScheduled}, NextRunTimeLTE: &due}
	wantQuery := func(want ...string) {
		t.Helper()
		got, err := s.Query(ctx, filter)
		if err != nil {
			t.Fatalf("Query: %v", err)
		}
		if len(got) != len(want) {
			t.Fatalf("Query = %d jobs %+v, want %q", len(got), got, want)
		}
		for i, job := range got {
			if job.ID != want[i] {
				t.Fatalf("Query = %+v, want %q", got, want)
			}
		}
	}
	// The first queries of the shards see the present.
	wantQuery("a", "b", "c")
	clock.Advance(20 * time.Second)
	// a leaves the status, b is deleted, c moves later, d is new: the index
	// still shows the old rows.
	if _, err := s.Update(ctx, "a", jobs.Changes{jobs.FieldStatus: jobs.StatusPaused}); err != nil {
		t.Fatalf("Update: %v", err)
	}
	if _, err := s.Delete(ctx, "b"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := s.Update(ctx, "c", jobs.Changes{jobs.FieldNextRunTime: due.Add(time.Hour)}); err != nil {
		t.Fatalf("Update: %v", err)
	}
	if _, err := s.Create(ctx, jobs.Job{ID: "d", NextRunTime: &due}); err != nil {
		t.Fatalf("Create: %v", err)
	}
	wantQuery()
	filter.Metadata = map[string]string{"k": "v"}
	wantQuery()
	filter.Metadata = nil
	// Once the index caught up, d is found.
	clock.Advance(20 * time.Second)
	wantQuery("d")
}
