package runtimetest

import (
	"context"

	"github.com/duradyn/duradyn/provider"
)

// ofKind returns the events of events whose kind is K, in order.
func ofKind[K provider.EventKind](events []provider.Event) []provider.Event {
	var out []provider.Event
	for _, ev := range events {
		if _, ok := ev.Kind.(K); ok {
			out = append(out, ev)
		}
	}
	return out
}

// timerDelayMs returns the delay a TimerCreated event records: its fire
// time minus the time it was written.
func timerDelayMs(ev provider.Event) int64 {
	return int64(ev.Kind.(provider.TimerCreated).FireAtMs) - int64(ev.TimestampMs)
}

// blockUntilCancelled is an activity body that never finishes on its own:
// it returns once its context is cancelled (the activity was cancelled or
// the runtime stops).
func blockUntilCancelled(ctx context.Context, _ string) (string, error) {
	<-ctx.Done()
	return "", context.Cause(ctx)
}

// appDetails returns the application failure details of d, failing the
// test if d is of another category.
func appDetails(h *H, d provider.ErrorDetails) provider.ApplicationDetails {
	h.Helper()
	app, ok := d.(provider.ApplicationDetails)
	if !ok {
		h.Fatalf("failure %#v is not an application failure", d)
	}
	return app
}
