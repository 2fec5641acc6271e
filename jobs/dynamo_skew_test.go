package jobs_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/duradyn/duradyn/internal/clockskew/skewtest"
	"github.com/duradyn/duradyn/jobs"
)

// TestDynamoStoreClockSkew: a store whose clock runs five seconds ahead
// learns so from DynamoDB's responses and logs it once; one on the system
// clock measures no skew and logs nothing.
func TestDynamoStoreClockSkew(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env := newDynamoEnv(t)
	const ahead = 5 * time.Second
	var warnings skewtest.Warnings
	skewed := env.store(t, func(o *jobs.DynamoOptions) {
		o.Now = func() time.Time { return time.Now().Add(ahead) }
		o.Logger = warnings.Logger()
	})
	honest := env.store(t, func(o *jobs.DynamoOptions) { o.Logger = warnings.Logger() })
	if _, _, ok := skewed.ClockSkew(); ok {
		t.Fatal("ClockSkew before any request: ok, want no estimate")
	}
	next := time.Now().UTC().Add(time.Hour).Truncate(time.Millisecond)
	for i := range 20 {
		id := fmt.Sprint("skew-", i)
		if _, err := skewed.Create(ctx, jobs.Job{ID: id, NextRunTime: &next}); err != nil {
			t.Fatal(err)
		}
		if _, err := honest.Get(ctx, id); err != nil {
			t.Fatal(err)
		}
		if _, err := skewed.Get(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	skewtest.Check(t, "a clock 5 s ahead", skewed.ClockSkew, ahead)
	skewtest.Check(t, "the system clock", honest.ClockSkew, 0)
	if got := warnings.Lines(); len(got) != 1 {
		t.Fatalf("%d skew warnings, want exactly 1 (the store ahead): %q", len(got), got)
	}
}
