package durable

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/duradyn/duradyn/provider"
)

func TestSubscribedReadsHistoryAsTheEngineDelivers(t *testing.T) {
	src := func(id uint64) *uint64 { return &id }
	ev := func(id uint64, source *uint64, kind provider.EventKind) provider.Event {
		return provider.Event{EventID: id, SourceEventID: source, InstanceID: "i", ExecutionID: 1, Kind: kind}
	}
	started := ev(1, nil, provider.OrchestrationStarted{Name: "O", Version: "1.0.0"})
	sub := func(id uint64, name string) provider.Event {
		return ev(id, nil, provider.ExternalSubscribed{Name: name})
	}
	raised := func(id uint64, name string) provider.Event {
		return ev(id, nil, provider.ExternalEvent{Name: name, Data: "d"})
	}
	for _, tc := range []struct {
		name           string
		history        []provider.Event
		waiting, ended bool
	}{
		{"no history", nil, false, false},
		{"started, no wait", []provider.Event{started}, false, false},
		{"waiting", []provider.Event{started, sub(2, "Go")}, true, false},
		{"waiting for another event", []provider.Event{started, sub(2, "Other")}, false, false},
		{"wait satisfied", []provider.Event{started, sub(2, "Go"), raised(3, "Go")}, false, false},
		{"another event does not satisfy it", []provider.Event{started, sub(2, "Go"), raised(3, "Other")}, true, false},
		{"an event before the wait is dropped", []provider.Event{started, raised(2, "Go"), sub(3, "Go")}, true, false},
		{"two waits, one event", []provider.Event{started, sub(2, "Go"), sub(3, "Go"), raised(4, "Go")}, true, false},
		{"wait cancelled", []provider.Event{started, sub(2, "Go"), ev(3, src(2), provider.ExternalSubscribedCancelled{Reason: "dropped_future"})}, false, false},
		{"the other wait cancelled", []provider.Event{started, sub(2, "Go"), sub(3, "Go"), ev(4, src(2), provider.ExternalSubscribedCancelled{Reason: "dropped_future"})}, true, false},
		{"completed", []provider.Event{started, sub(2, "Go"), ev(3, nil, provider.OrchestrationCompleted{Output: "o"})}, false, true},
		{"failed", []provider.Event{started, ev(2, nil, provider.OrchestrationFailed{Details: provider.ApplicationDetails{Message: "m"}})}, false, true},
		{"continued as new", []provider.Event{started, ev(2, nil, provider.OrchestrationContinuedAsNew{Input: "i"})}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			waiting, ended := subscribed(tc.history, "Go")
			if waiting != tc.waiting || ended != tc.ended {
				t.Fatalf("waiting %v, ended %v; want %v, %v", waiting, ended, tc.waiting, tc.ended)
			}
		})
	}
}

// WaitForSubscription returns once the wait is recorded, so an event
// raised then is delivered: here the orchestration subscribes only after
// an activity the test holds, so a raise without the wait would come
// before the subscription and be dropped.
func TestWaitForSubscription(t *testing.T) {
	release := make(chan struct{})
	hold := NewActivity("Hold", func(ctx context.Context, _ string) (string, error) {
		select {
		case <-release:
			return "released", nil
		case <-ctx.Done():
			return "", context.Cause(ctx)
		}
	})
	orch := NewOrchestration("Approve", func(ctx *OrchestrationContext, _ string) (string, error) {
		if _, err := hold.Call(ctx, "").Get(ctx); err != nil {
			return "", err
		}
		return WaitForEvent[string](ctx, "Approval").Get(ctx)
	})
	quick := NewOrchestration("Quick", func(*OrchestrationContext, string) (string, error) { return "done", nil })
	p, c, _ := utServe(t, hold, orch, quick)

	t.Run("delivers the event raised once it returns", func(t *testing.T) {
		if err := c.StartOrchestration(utCtx(t), "approve-1", "Approve", ""); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- c.WaitForSubscription(utCtx(t), "approve-1", "Approval") }()
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		history, err := p.Read(utCtx(t), "approve-1")
		if err != nil {
			t.Fatal(err)
		}
		if waiting, _ := subscribed(history, "Approval"); !waiting {
			t.Fatalf("returned with history %v", history)
		}
		if err := c.RaiseEvent(utCtx(t), "approve-1", "Approval", "yes"); err != nil {
			t.Fatal(err)
		}
		if out := utCompleted(t, c, "approve-1"); out != `"yes"` {
			t.Fatalf("output %s; want \"yes\"", out)
		}
	})
	t.Run("an instance that ends without waiting", func(t *testing.T) {
		if err := c.StartOrchestration(utCtx(t), "quick-1", "Quick", ""); err != nil {
			t.Fatal(err)
		}
		if err := c.WaitForSubscription(utCtx(t), "quick-1", "Approval"); !errors.Is(err, ErrInstanceEnded) {
			t.Fatalf("error %v; want ErrInstanceEnded", err)
		}
	})
	t.Run("ctx ends first", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(utCtx(t), 50*time.Millisecond)
		defer cancel()
		if err := c.WaitForSubscription(ctx, "never-started", "Approval"); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("error %v; want DeadlineExceeded", err)
		}
	})
	t.Run("invalid input", func(t *testing.T) {
		for _, args := range [][2]string{{"", "Approval"}, {"approve-1", ""}} {
			if err := c.WaitForSubscription(utCtx(t), args[0], args[1]); !errors.Is(err, provider.ErrInvalidInput) {
				t.Errorf("WaitForSubscription(%q, %q): %v; want ErrInvalidInput", args[0], args[1], err)
			}
		}
	})
}
