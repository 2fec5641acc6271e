package locks_test

import (
	"slices"
	"testing"
	"time"

	"github.com/duradyn/duradyn/locks"
	"github.com/duradyn/duradyn/locks/lockstest"
)

// BenchmarkBlockedAcquireWake measures how soon a blocked Acquire takes a
// lock after its holder released it, on DynamoDB Local: from the return of
// Release to the return of the waiter's Acquire (mean, p50 and p90 in ms), and
// the requests the waiter sends beyond its two tries (the one that found
// the lock held and the one after the notice): requests while waiting,
// which must be 0.
//
// SQS: holder and waiter are two processes, each with its own
// [queues.Signals] on one queue, so the notice travels through SQS.
// SameProcess: the two lockers share in-process signals. The clock is a
// fake one that never moves, so no lease ends and only the notice wakes
// the waiter.
func BenchmarkBlockedAcquireWake(b *testing.B) {
	for _, tc := range []struct {
		name  string
		queue bool
	}{{"SQS", true}, {"SameProcess", false}} {
		b.Run(tc.name, func(b *testing.B) {
			env := newDynamoEnv(b, tc.queue)
			clock := lockstest.NewFakeClock(time.Now())
			counter := &countingAPI{API: env.ep.DynamoDB(env.cfg)}
			holder := env.locker(b, withClock(clock), env.withSignals(b))
			waiter := env.locker(b, withClock(clock), env.withSignals(b), func(o *locks.DynamoOptions) { o.Client = counter })
			ctx := b.Context()
			type outcome struct {
				at  time.Time
				err error
				ok  bool
			}
			wakes := make([]time.Duration, 0, b.N)
			var extra int64
			b.ResetTimer()
			for range b.N {
				if _, ok, err := holder.Acquire(ctx, "k", time.Hour); err != nil || !ok {
					b.Fatalf("holder Acquire = %v, %v", ok, err)
				}
				before := counter.updates.Load()
				done := make(chan outcome, 1)
				go func() {
					_, ok, err := waiter.Acquire(ctx, "k", time.Hour, locks.WithWait(time.Minute))
					done <- outcome{time.Now(), err, ok}
				}()
				if err := clock.AwaitPending(ctx, 2); err != nil {
					b.Fatalf("waiter not blocked: %v", err)
				}
				if ok, err := holder.Release(ctx, "k"); err != nil || !ok {
					b.Fatalf("Release = %v, %v", ok, err)
				}
				released := time.Now()
				r := <-done
				if r.err != nil || !r.ok {
					b.Fatalf("waiter Acquire = %v, %v", r.ok, r.err)
				}
				wakes = append(wakes, r.at.Sub(released))
				extra += counter.updates.Load() - before - 2
				if ok, err := waiter.Release(ctx, "k"); err != nil || !ok {
					b.Fatalf("waiter Release = %v, %v", ok, err)
				}
			}
			b.StopTimer()
			var total time.Duration
			for _, w := range wakes {
				total += w
			}
			slices.Sort(wakes)
			b.ReportMetric(ms(total)/float64(len(wakes)), "wake-ms/op")
			b.ReportMetric(ms(wakes[len(wakes)/2]), "p50-wake-ms")
			b.ReportMetric(ms(wakes[len(wakes)*9/10]), "p90-wake-ms")
			b.ReportMetric(float64(extra)/float64(b.N), "wait-requests/op")
		})
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
