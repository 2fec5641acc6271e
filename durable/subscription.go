package durable

import (
	"context"
	"errors"
	"slices"

	"github.com/duradyn/duradyn/provider"
)

// ErrInstanceEnded reports that an instance completed or failed before it
// did what a client waited for ([Client.WaitForSubscription]).
var ErrInstanceEnded = errors.New("durable: instance ended")

// WaitForSubscription waits until instance id waits for the external event
// name: until its current execution's history records a [WaitForEvent] of
// that name that no event has satisfied and that was not cancelled. An
// event raised with [Client.RaiseEvent] from then on is delivered to that
// wait, unless the orchestration stops waiting first (a [Race] it loses to
// a timer, say). Raising before that point risks the event arriving before
// the wait is recorded, and such an event is dropped (duroxide's rule).
//
// An instance that does not exist yet is waited for, and so is the next
// execution of one that continued as new. If the instance completes or
// fails first, the error wraps [ErrInstanceEnded]; when ctx ends first, it
// wraps ctx.Err(). Each poll reads the current execution's history, with
// the backoff of the other Wait methods ([ClientOptions]). An empty id or
// name fails with an error wrapping [provider.ErrInvalidInput].
//
// Messages that must not be lost whatever the timing go through a queue
// instead: [Client.EnqueueEvent] and [Dequeue].
func (c *Client) WaitForSubscription(ctx context.Context, id, name string) error {
	op := clientOp("wait for subscription", id)
	if err := checkInstanceID(op, id); err != nil {
		return err
	}
	if err := checkNonEmpty(op, "event name", name); err != nil {
		return err
	}
	err := c.poll(ctx, func() (bool, error) {
		history, err := c.p.Read(ctx, id)
		if err != nil {
			return false, err
		}
		waiting, ended := subscribed(history, name)
		if ended {
			return false, ErrInstanceEnded
		}
		return waiting, nil
	})
	if err != nil {
		return clientError(op+" to event "+name, err)
	}
	return nil
}

// subscribed reads an execution's history as the replay engine applies it
// and reports whether a wait for event name is pending at its end, and
// whether the execution completed or failed. An event goes to the oldest
// pending wait of its name and is dropped when there is none; a cancelled
// wait receives nothing.
func subscribed(history []provider.Event, name string) (waiting, ended bool) {
	var pending []uint64 // schedule ids of the pending waits, oldest first
	for _, ev := range history {
		switch k := ev.Kind.(type) {
		case provider.ExternalSubscribed:
			if k.Name == name {
				pending = append(pending, ev.EventID)
			}
		case provider.ExternalSubscribedCancelled:
			if ev.SourceEventID != nil {
				src := *ev.SourceEventID
				pending = slices.DeleteFunc(pending, func(id uint64) bool { return id == src })
			}
		case provider.ExternalEvent:
			if k.Name == name && len(pending) > 0 {
				pending = pending[1:]
			}
		case provider.OrchestrationCompleted, provider.OrchestrationFailed:
			return false, true
		case provider.OrchestrationContinuedAsNew:
			return false, false // the next execution may wait
		}
	}
	return len(pending) > 0, false
}
