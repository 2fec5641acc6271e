package durable

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/duradyn/duradyn/durable/internal/replay"
)

// A turn that only waits for several activities or sub-orchestrations
// asks the provider for a completion window of 1 ms per one awaited
// (Options.FanInWindow); a turn that schedules work, or that leaves one or
// none awaited, asks for none. Resumed and replayed turns count the same.
func TestFanInTurnsAskForACompletionWindow(t *testing.T) {
	fanOut := func(ctx *OrchestrationContext, _ string) (string, error) {
		var fs []Future[Raw]
		for i := range 6 {
			fs = append(fs, CallActivity[Raw](ctx, "part", Raw(strconv.Itoa(i))))
		}
		fs = append(fs, CallSubOrchestration[Raw](ctx, "child", Raw("c")))
		_, err := AwaitAll(ctx, fs...)
		return "", err
	}
	// One more activity per completion, three in flight: every turn
	// schedules, so none asks for a window.
	sliding := func(ctx *OrchestrationContext, _ string) (string, error) {
		var inFlight []Future[Raw]
		next := 0
		for ; next < 3; next++ {
			inFlight = append(inFlight, CallActivity[Raw](ctx, "part", Raw(strconv.Itoa(next))))
		}
		for len(inFlight) > 0 {
			if _, err := inFlight[0].Get(ctx); err != nil {
				return "", err
			}
			inFlight = inFlight[1:]
			if next < 8 {
				inFlight = append(inFlight, CallActivity[Raw](ctx, "part", Raw(strconv.Itoa(next))))
				next++
			}
		}
		return "", nil
	}
	// An activity loses its race to a timer and is cancelled: it is not
	// awaited any more. (The driver answers a turn's activities before
	// its timers, so the racing activities come a turn after the timer.)
	raced := func(ctx *OrchestrationContext, _ string) (string, error) {
		timer := ctx.CreateTimer(time.Second)
		if _, err := CallActivity[Raw](ctx, "first", Raw("x")).Get(ctx); err != nil {
			return "", err
		}
		a := CallActivity[Raw](ctx, "slow", Raw("a"))
		b := CallActivity[Raw](ctx, "slow", Raw("b"))
		if Race(ctx, timer, a) != 0 {
			t.Error("the activity beat the timer")
		}
		_, err := b.Get(ctx)
		return "", err
	}
	for _, tc := range []struct {
		name     string
		orch     rxOrch
		perTurn  int
		awaiting []int
		windows  []time.Duration
	}{
		// Six activities and a child; two answers a turn.
		{"fan-out", fanOut, 2, []int{7, 5, 3, 1, 0}, []time.Duration{0, 5 * time.Millisecond, 3 * time.Millisecond, 0, 0}},
		// Its tail only waits: two awaited, then one.
		{"sliding window", sliding, 1, []int{3, 3, 3, 3, 3, 3, 2, 1, 0}, []time.Duration{0, 0, 0, 0, 0, 0, 2 * time.Millisecond, 0, 0}},
		{"race", raced, 1, []int{1, 2, 1, 1, 0}, make([]time.Duration, 5)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, keep := range []bool{false, true} {
				d := driveTurns(t, tc.orch, "", tc.perTurn, keep)
				if !slices.Equal(d.awaiting, tc.awaiting) || !slices.Equal(d.windows, tc.windows) {
					t.Errorf("keep %v: awaiting %v, windows %v; want %v and %v", keep, d.awaiting, d.windows, tc.awaiting, tc.windows)
				}
				if last := d.outcomes[len(d.outcomes)-1]; last != replay.Completed {
					t.Errorf("keep %v: ended %v, want completed", keep, last)
				}
			}
		})
	}
}

// FanInWindow caps the window; a negative one asks for none.
func TestCompletionWindowIsCapped(t *testing.T) {
	for _, tc := range []struct {
		awaiting    int
		limit, want time.Duration
	}{
		{7, 100 * time.Millisecond, 7 * time.Millisecond},
		{10_000, 100 * time.Millisecond, 100 * time.Millisecond},
		{10_000, time.Second, time.Second},
		{10_000, -1, 0},
	} {
		turn := &replay.Turn{Outcome: replay.Continue, Awaiting: tc.awaiting}
		if got := completionWindow(turn, tc.limit); got != tc.want {
			t.Errorf("%d awaited, FanInWindow %v: window %v, want %v", tc.awaiting, tc.limit, got, tc.want)
		}
	}
}
