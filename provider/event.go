package provider

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Event is one entry of an execution's append-only history. Providers store
// events exactly as given and never reorder or rewrite them.
//
// On the wire an event is one flat JSON object: the fields below followed by
// a "type" tag and the fields of its [EventKind]. [json.Marshal] and
// [json.Unmarshal] on an Event use that shape; an unknown "type" is an
// error wrapping [ErrUnknownKind].
type Event struct {
	// EventID is the 1-based position in the execution's history, assigned
	// by the runtime. OrchestrationStarted is always 1. Never 0.
	EventID uint64
	// SourceEventID links a completion to the event that scheduled it.
	SourceEventID *uint64
	// InstanceID and ExecutionID repeat the history's key.
	InstanceID  string
	ExecutionID uint64 // execution id within the instance; the first is 1
	// TimestampMs is the creation time in epoch milliseconds.
	TimestampMs uint64
	// DuroxideVersion is the semver of the runtime that wrote the event; on
	// OrchestrationStarted it is the execution's pinned version.
	DuroxideVersion string
	// Kind is what happened.
	Kind EventKind
}

// IsTerminal reports whether the event ends its execution: completed,
// failed or continued-as-new.
func (e Event) IsTerminal() bool {
	switch e.Kind.(type) {
	case OrchestrationCompleted, OrchestrationFailed, OrchestrationContinuedAsNew:
		return true
	}
	return false
}

// EventKind is the variant part of an [Event]. The types in this package
// that implement it are the complete set duroxide defines.
type EventKind interface {
	// EventType is the JSON "type" tag, such as "ActivityScheduled".
	EventType() string
	isEventKind()
}

// OrchestrationStarted is the first event of every execution.
type OrchestrationStarted struct {
	// Name is the orchestration name.
	Name string `json:"name"`
	// Version is the orchestration version this execution runs.
	Version string `json:"version"`
	// Input is the execution's input.
	Input string `json:"input"`
	// ParentInstance is the parent instance id of a sub-orchestration; nil
	// for a root or detached instance.
	ParentInstance *string `json:"parent_instance"`
	// ParentID is the parent's SubOrchestrationScheduled event id; nil
	// without a parent.
	ParentID *uint64 `json:"parent_id"`
	// CarryForwardEvents is omitted from the wire when nil and encoded as
	// [] when empty but non-nil.
	CarryForwardEvents []CarryForwardEvent `json:"carry_forward_events,omitzero"`
	// InitialCustomStatus is the custom status carried over by
	// continue-as-new; nil (omitted from the wire) when there is none.
	InitialCustomStatus *string `json:"initial_custom_status,omitempty"`
	// ParentExecutionID is the parent's execution that scheduled this
	// sub-orchestration, copied from its [StartOrchestrationItem]. 0
	// (omitted from the wire) for a root instance or a child whose start
	// did not carry it.
	ParentExecutionID uint64 `json:"parent_execution_id,omitzero"`
}

// OrchestrationCompleted ends an execution successfully.
type OrchestrationCompleted struct {
	// Output is the orchestration's result.
	Output string `json:"output"`
}

// OrchestrationFailed ends an execution with an error.
type OrchestrationFailed struct {
	// Details says why the execution failed; required.
	Details ErrorDetails `json:"details"`
}

// OrchestrationContinuedAsNew ends an execution that continues as a new one.
type OrchestrationContinuedAsNew struct {
	// Input is the input of the next execution.
	Input string `json:"input"`
}

// OrchestrationCancelRequested records a cancellation request.
type OrchestrationCancelRequested struct {
	// Reason is the cancellation reason.
	Reason string `json:"reason"`
}

// OrchestrationChained records a detached (fire-and-forget) start.
type OrchestrationChained struct {
	// Name is the orchestration to start.
	Name string `json:"name"`
	// Instance is the new instance's id.
	Instance string `json:"instance"`
	// Input is its input.
	Input string `json:"input"`
}

// ActivityScheduled records an activity call; its event id is the activity id.
type ActivityScheduled struct {
	// Name is the activity name.
	Name string `json:"name"`
	// Input is the activity input.
	Input string `json:"input"`
	// SessionID pins the activity to a session; nil (omitted) for none.
	SessionID *string `json:"session_id,omitempty"`
	// Tag routes the activity to matching workers; nil (omitted) for
	// untagged.
	Tag *string `json:"tag,omitempty"`
}

// ActivityCompleted records an activity result.
type ActivityCompleted struct {
	// Result is the activity's output.
	Result string `json:"result"`
}

// ActivityFailed records an activity failure.
type ActivityFailed struct {
	// Details says why the activity failed; required.
	Details ErrorDetails `json:"details"`
}

// ActivityCancelRequested records that an in-flight activity was cancelled.
type ActivityCancelRequested struct {
	// Reason is the cancellation reason.
	Reason string `json:"reason"`
}

// TimerCreated records a durable timer.
type TimerCreated struct {
	// FireAtMs is when the timer fires, in epoch milliseconds.
	FireAtMs uint64 `json:"fire_at_ms"`
}

// TimerFired records a timer firing.
type TimerFired struct {
	// FireAtMs is the timer's fire time, in epoch milliseconds.
	FireAtMs uint64 `json:"fire_at_ms"`
}

// ExternalSubscribed records a positional wait for a named external event.
type ExternalSubscribed struct {
	// Name is the external event name waited for.
	Name string `json:"name"`
}

// ExternalEvent records a delivered external event.
type ExternalEvent struct {
	// Name is the event name.
	Name string `json:"name"`
	// Data is the event payload.
	Data string `json:"data"`
}

// ExternalSubscribedCancelled records a cancelled external wait.
type ExternalSubscribedCancelled struct {
	// Reason is the cancellation reason.
	Reason string `json:"reason"`
}

// SubOrchestrationScheduled records a sub-orchestration start.
type SubOrchestrationScheduled struct {
	// Name is the child orchestration's name.
	Name string `json:"name"`
	// Instance is the child instance id as scheduled, relative to the
	// parent when it begins with "sub::": an id the runtime chose
	// ("sub::N", or "sub::E.N" in executions after the first) names the
	// instance "<parent id>::sub::N". Any other id is the child's own.
	Instance string `json:"instance"`
	// Input is the child's input.
	Input string `json:"input"`
}

// SubOrchestrationCompleted records a sub-orchestration result.
type SubOrchestrationCompleted struct {
	// Result is the child's output.
	Result string `json:"result"`
}

// SubOrchestrationFailed records a sub-orchestration failure.
type SubOrchestrationFailed struct {
	// Details says why the child failed; required.
	Details ErrorDetails `json:"details"`
}

// SubOrchestrationCancelRequested records a cancelled sub-orchestration.
type SubOrchestrationCancelRequested struct {
	// Reason is the cancellation reason.
	Reason string `json:"reason"`
}

// QueueSubscribed records a FIFO mailbox subscription. Its wire tag is the
// legacy "ExternalSubscribedPersistent".
type QueueSubscribed struct {
	// Name is the mailbox (queue) name.
	Name string `json:"name"`
}

// QueueEventDelivered records a FIFO mailbox delivery. Its wire tag is the
// legacy "ExternalEventPersistent".
type QueueEventDelivered struct {
	// Name is the mailbox (queue) name.
	Name string `json:"name"`
	// Data is the message payload.
	Data string `json:"data"`
}

// QueueSubscriptionCancelled records a cancelled mailbox subscription. Its
// wire tag is the legacy "ExternalSubscribedPersistentCancelled".
type QueueSubscriptionCancelled struct {
	// Reason is the cancellation reason.
	Reason string `json:"reason"`
}

// CustomStatusUpdated sets (Status non-nil) or clears (nil) the instance's
// custom status. Providers materialize it at ack.
type CustomStatusUpdated struct {
	// Status is the new custom status; nil (null on the wire) clears it.
	Status *string `json:"status"`
}

// KeyValueSet sets a key of the instance's KV store. Providers materialize it
// at ack.
type KeyValueSet struct {
	// Key is the key being set.
	Key string `json:"key"`
	// Value is its new value; "" is a real value.
	Value string `json:"value"`
	// LastUpdatedAtMs is when the key was set, in epoch milliseconds; 0
	// for events written before the field existed.
	LastUpdatedAtMs uint64 `json:"last_updated_at_ms" wire:"default"`
}

// KeyValueCleared removes one key of the instance's KV store.
type KeyValueCleared struct {
	// Key is the key to remove.
	Key string `json:"key"`
}

// KeyValuesCleared removes every key of the instance's KV store.
type KeyValuesCleared struct{}

// kindDecoder decodes an event's kind from its JSON object data, already
// split into fields.
type kindDecoder func(data []byte, fields jsonFields) (EventKind, error)

// eventKinds maps each wire tag to a decoder of that kind's fields.
var eventKinds = eventKindDecoders()

func kindOf[K EventKind](tag string) kindDecoder {
	what := "event " + tag
	return func(data []byte, fields jsonFields) (EventKind, error) {
		var k K
		if err := decodeFields(data, fields, &k, what); err != nil {
			return nil, err
		}
		return k, nil
	}
}

// detailsKindOf decodes a kind whose only field is error details.
func detailsKindOf(tag string, build func(ErrorDetails) EventKind) kindDecoder {
	what := "event " + tag
	return func(data []byte, fields jsonFields) (EventKind, error) {
		var w struct {
			Details details `json:"details"`
		}
		if err := decodeFields(data, fields, &w, what); err != nil {
			return nil, err
		}
		return build(w.Details.ErrorDetails), nil
	}
}

func eventKindDecoders() map[string]kindDecoder {
	return map[string]kindDecoder{
		"OrchestrationStarted":                  kindOf[OrchestrationStarted]("OrchestrationStarted"),
		"OrchestrationCompleted":                kindOf[OrchestrationCompleted]("OrchestrationCompleted"),
		"OrchestrationFailed":                   detailsKindOf("OrchestrationFailed", func(d ErrorDetails) EventKind { return OrchestrationFailed{d} }),
		"OrchestrationContinuedAsNew":           kindOf[OrchestrationContinuedAsNew]("OrchestrationContinuedAsNew"),
		"OrchestrationCancelRequested":          kindOf[OrchestrationCancelRequested]("OrchestrationCancelRequested"),
		"OrchestrationChained":                  kindOf[OrchestrationChained]("OrchestrationChained"),
		"ActivityScheduled":                     kindOf[ActivityScheduled]("ActivityScheduled"),
		"ActivityCompleted":                     kindOf[ActivityCompleted]("ActivityCompleted"),
		"ActivityFailed":                        detailsKindOf("ActivityFailed", func(d ErrorDetails) EventKind { return ActivityFailed{d} }),
		"ActivityCancelRequested":               kindOf[ActivityCancelRequested]("ActivityCancelRequested"),
		"TimerCreated":                          kindOf[TimerCreated]("TimerCreated"),
		"TimerFired":                            kindOf[TimerFired]("TimerFired"),
		"ExternalSubscribed":                    kindOf[ExternalSubscribed]("ExternalSubscribed"),
		"ExternalEvent":                         kindOf[ExternalEvent]("ExternalEvent"),
		"ExternalSubscribedCancelled":           kindOf[ExternalSubscribedCancelled]("ExternalSubscribedCancelled"),
		"SubOrchestrationScheduled":             kindOf[SubOrchestrationScheduled]("SubOrchestrationScheduled"),
		"SubOrchestrationCompleted":             kindOf[SubOrchestrationCompleted]("SubOrchestrationCompleted"),
		"SubOrchestrationFailed":                detailsKindOf("SubOrchestrationFailed", func(d ErrorDetails) EventKind { return SubOrchestrationFailed{d} }),
		"SubOrchestrationCancelRequested":       kindOf[SubOrchestrationCancelRequested]("SubOrchestrationCancelRequested"),
		"ExternalSubscribedPersistent":          kindOf[QueueSubscribed]("ExternalSubscribedPersistent"),
		"ExternalEventPersistent":               kindOf[QueueEventDelivered]("ExternalEventPersistent"),
		"ExternalSubscribedPersistentCancelled": kindOf[QueueSubscriptionCancelled]("ExternalSubscribedPersistentCancelled"),
		"CustomStatusUpdated":                   kindOf[CustomStatusUpdated]("CustomStatusUpdated"),
		"KeyValueSet":                           kindOf[KeyValueSet]("KeyValueSet"),
		"KeyValueCleared":                       kindOf[KeyValueCleared]("KeyValueCleared"),
		"KeyValuesCleared":                      kindOf[KeyValuesCleared]("KeyValuesCleared"),
	}
}

func (OrchestrationStarted) isEventKind()            {}
func (OrchestrationCompleted) isEventKind()          {}
func (OrchestrationFailed) isEventKind()             {}
func (OrchestrationContinuedAsNew) isEventKind()     {}
func (OrchestrationCancelRequested) isEventKind()    {}
func (OrchestrationChained) isEventKind()            {}
func (ActivityScheduled) isEventKind()               {}
func (ActivityCompleted) isEventKind()               {}
func (ActivityFailed) isEventKind()                  {}
func (ActivityCancelRequested) isEventKind()         {}
func (TimerCreated) isEventKind()                    {}
func (TimerFired) isEventKind()                      {}
func (ExternalSubscribed) isEventKind()              {}
func (ExternalEvent) isEventKind()                   {}
func (ExternalSubscribedCancelled) isEventKind()     {}
func (SubOrchestrationScheduled) isEventKind()       {}
func (SubOrchestrationCompleted) isEventKind()       {}
func (SubOrchestrationFailed) isEventKind()          {}
func (SubOrchestrationCancelRequested) isEventKind() {}
func (QueueSubscribed) isEventKind()                 {}
func (QueueEventDelivered) isEventKind()             {}
func (QueueSubscriptionCancelled) isEventKind()      {}
func (CustomStatusUpdated) isEventKind()             {}
func (KeyValueSet) isEventKind()                     {}
func (KeyValueCleared) isEventKind()                 {}
func (KeyValuesCleared) isEventKind()                {}

// EventType returns "OrchestrationStarted".
func (OrchestrationStarted) EventType() string { return "OrchestrationStarted" }

// EventType returns "OrchestrationCompleted".
func (OrchestrationCompleted) EventType() string { return "OrchestrationCompleted" }

// EventType returns "OrchestrationFailed".
func (OrchestrationFailed) EventType() string { return "OrchestrationFailed" }

// EventType returns "OrchestrationContinuedAsNew".
func (OrchestrationContinuedAsNew) EventType() string { return "OrchestrationContinuedAsNew" }

// EventType returns "OrchestrationCancelRequested".
func (OrchestrationCancelRequested) EventType() string { return "OrchestrationCancelRequested" }

// EventType returns "OrchestrationChained".
func (OrchestrationChained) EventType() string { return "OrchestrationChained" }

// EventType returns "ActivityScheduled".
func (ActivityScheduled) EventType() string { return "ActivityScheduled" }

// EventType returns "ActivityCompleted".
func (ActivityCompleted) EventType() string { return "ActivityCompleted" }

// EventType returns "ActivityFailed".
func (ActivityFailed) EventType() string { return "ActivityFailed" }

// EventType returns "ActivityCancelRequested".
func (ActivityCancelRequested) EventType() string { return "ActivityCancelRequested" }

// EventType returns "TimerCreated".
func (TimerCreated) EventType() string { return "TimerCreated" }

// EventType returns "TimerFired".
func (TimerFired) EventType() string { return "TimerFired" }

// EventType returns "ExternalSubscribed".
func (ExternalSubscribed) EventType() string { return "ExternalSubscribed" }

// EventType returns "ExternalEvent".
func (ExternalEvent) EventType() string { return "ExternalEvent" }

// EventType returns "ExternalSubscribedCancelled".
func (ExternalSubscribedCancelled) EventType() string { return "ExternalSubscribedCancelled" }

// EventType returns "SubOrchestrationScheduled".
func (SubOrchestrationScheduled) EventType() string { return "SubOrchestrationScheduled" }

// EventType returns "SubOrchestrationCompleted".
func (SubOrchestrationCompleted) EventType() string { return "SubOrchestrationCompleted" }

// EventType returns "SubOrchestrationFailed".
func (SubOrchestrationFailed) EventType() string { return "SubOrchestrationFailed" }

// EventType returns "SubOrchestrationCancelRequested".
func (SubOrchestrationCancelRequested) EventType() string { return "SubOrchestrationCancelRequested" }

// EventType returns the legacy tag "ExternalSubscribedPersistent".
func (QueueSubscribed) EventType() string { return "ExternalSubscribedPersistent" }

// EventType returns the legacy tag "ExternalEventPersistent".
func (QueueEventDelivered) EventType() string { return "ExternalEventPersistent" }

// EventType returns the legacy tag "ExternalSubscribedPersistentCancelled".
func (QueueSubscriptionCancelled) EventType() string { return "ExternalSubscribedPersistentCancelled" }

// EventType returns "CustomStatusUpdated".
func (CustomStatusUpdated) EventType() string { return "CustomStatusUpdated" }

// EventType returns "KeyValueSet".
func (KeyValueSet) EventType() string { return "KeyValueSet" }

// EventType returns "KeyValueCleared".
func (KeyValueCleared) EventType() string { return "KeyValueCleared" }

// EventType returns "KeyValuesCleared".
func (KeyValuesCleared) EventType() string { return "KeyValuesCleared" }

type eventHeader struct {
	EventID         uint64  `json:"event_id"`
	SourceEventID   *uint64 `json:"source_event_id"`
	InstanceID      string  `json:"instance_id"`
	ExecutionID     uint64  `json:"execution_id"`
	TimestampMs     uint64  `json:"timestamp_ms"`
	DuroxideVersion string  `json:"duroxide_version"`
	Type            string  `json:"type"`
}

// MarshalJSON encodes the event as one flat object in duroxide's field
// order: the header fields, "type", then the kind's fields.
func (e Event) MarshalJSON() ([]byte, error) {
	if e.Kind == nil {
		return nil, fmt.Errorf("event %d: %w: nil kind", e.EventID, ErrInvalidInput)
	}
	head, err := json.Marshal(eventHeader{e.EventID, e.SourceEventID, e.InstanceID, e.ExecutionID, e.TimestampMs, e.DuroxideVersion, e.Kind.EventType()})
	if err != nil {
		return nil, err
	}
	var body []byte
	switch k := e.Kind.(type) {
	case OrchestrationFailed:
		body, err = json.Marshal(struct {
			D details `json:"details"`
		}{details{k.Details}})
	case ActivityFailed:
		body, err = json.Marshal(struct {
			D details `json:"details"`
		}{details{k.Details}})
	case SubOrchestrationFailed:
		body, err = json.Marshal(struct {
			D details `json:"details"`
		}{details{k.Details}})
	default:
		body, err = json.Marshal(e.Kind)
	}
	if err != nil {
		return nil, fmt.Errorf("event %d: %w", e.EventID, err)
	}
	if len(body) <= 2 { // a kind without fields encodes as {}
		return head, nil
	}
	out := make([]byte, 0, len(head)+len(body))
	out = append(out, head[:len(head)-1]...)
	out = append(out, ',')
	return append(out, body[1:]...), nil
}

// UnmarshalJSON decodes a flat event object. An unknown "type" is an error
// wrapping [ErrUnknownKind]; missing or null required fields are errors.
//
// The object is parsed once, and the header and the kind are filled from
// its fields (histories are decoded on every read, so this is the
// provider's hottest decoding).
func (e *Event) UnmarshalJSON(data []byte) error {
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		return fmt.Errorf("event: null is not an event")
	}
	fields, err := objectFields(data, "event")
	if err != nil {
		return err
	}
	var head eventHeader
	if err := decodeFields(data, fields, &head, "event"); err != nil {
		return err
	}
	decode, ok := eventKinds[head.Type]
	if !ok {
		return unknownKind("event", head.Type)
	}
	kind, err := decode(data, fields)
	if err != nil {
		return err
	}
	*e = Event{head.EventID, head.SourceEventID, head.InstanceID, head.ExecutionID, head.TimestampMs, head.DuroxideVersion, kind}
	return nil
}
