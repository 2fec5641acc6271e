package provider

import (
	"encoding/json"
	"fmt"
)

// WorkItem is a queue message. [ActivityExecuteItem] travels on the worker
// queue; every other variant travels on the orchestrator queue, keyed by
// [WorkItem.TargetInstance].
//
// Variants are value types. On the wire a work item is externally tagged
// with its duroxide variant name, {"TimerFired":{...}}: [json.Marshal] of a
// variant produces that shape and [UnmarshalWorkItem] decodes it.
type WorkItem interface {
	// Kind is the duroxide variant name, such as "StartOrchestration".
	Kind() string
	// TargetInstance is the instance whose queue the item belongs to: the
	// parent for sub-orchestration results, the item's instance otherwise.
	TargetInstance() string
	isWorkItem()
}

// StartOrchestrationItem starts an execution of an orchestration.
type StartOrchestrationItem struct {
	// Instance is the id of the instance to start.
	Instance string `json:"instance"`
	// Orchestration is the orchestration name.
	Orchestration string `json:"orchestration"`
	// Input is the orchestration input.
	Input string `json:"input"`
	// Version pins the orchestration version; nil resolves the latest.
	Version *string `json:"version"`
	// ParentInstance is the parent instance id of a sub-orchestration; nil
	// otherwise.
	ParentInstance *string `json:"parent_instance"`
	// ParentID is the parent's SubOrchestrationScheduled event id.
	ParentID *uint64 `json:"parent_id"`
	// ExecutionID is the execution to start, normally 1.
	ExecutionID uint64 `json:"execution_id"`
	// ParentExecutionID is the parent's execution that scheduled this
	// sub-orchestration, which its result is addressed to. 0 (omitted
	// from the wire, and absent from duroxide's encoding) when unknown:
	// the runtime then looks the execution up in the parent's history.
	ParentExecutionID uint64 `json:"parent_execution_id,omitzero"`
}

// ActivityExecuteItem asks a worker to run an activity. Its identity for
// cancellation is (Instance, ExecutionID, ID).
type ActivityExecuteItem struct {
	// Instance is the instance that scheduled the activity.
	Instance string `json:"instance"`
	// ExecutionID is the execution that scheduled it.
	ExecutionID uint64 `json:"execution_id"`
	// ID is the event id of the ActivityScheduled event.
	ID uint64 `json:"id"`
	// Name is the activity name.
	Name string `json:"name"`
	// Input is the activity input.
	Input string `json:"input"`
	// SessionID pins the activity to a session owner; nil for none.
	SessionID *string `json:"session_id,omitempty"`
	// Tag routes the activity to workers whose [TagFilter] accepts it; nil
	// for untagged.
	Tag *string `json:"tag,omitempty"`
}

// ActivityCompletedItem carries an activity's result to its orchestration.
type ActivityCompletedItem struct {
	// Instance is the orchestration instance to deliver to.
	Instance string `json:"instance"`
	// ExecutionID is the execution that scheduled the activity.
	ExecutionID uint64 `json:"execution_id"`
	// ID is the event id of the ActivityScheduled event.
	ID uint64 `json:"id"`
	// Result is the activity's output.
	Result string `json:"result"`
}

// ActivityFailedItem carries an activity's failure to its orchestration.
type ActivityFailedItem struct {
	// Instance is the orchestration instance to deliver to.
	Instance string `json:"instance"`
	// ExecutionID is the execution that scheduled the activity.
	ExecutionID uint64 `json:"execution_id"`
	// ID is the event id of the ActivityScheduled event.
	ID uint64 `json:"id"`
	// Details says why the activity failed; required.
	Details ErrorDetails `json:"details"`
}

// TimerFiredItem fires a durable timer. Enqueued by an orchestration turn it
// becomes visible at FireAtMs (epoch milliseconds).
type TimerFiredItem struct {
	// Instance is the instance that created the timer.
	Instance string `json:"instance"`
	// ExecutionID is the execution that created it.
	ExecutionID uint64 `json:"execution_id"`
	// ID is the event id of the TimerCreated event.
	ID uint64 `json:"id"`
	// FireAtMs is the fire time in epoch milliseconds.
	FireAtMs uint64 `json:"fire_at_ms"`
}

// ExternalRaisedItem delivers a named external event.
type ExternalRaisedItem struct {
	// Instance is the target instance.
	Instance string `json:"instance"`
	// Name is the event name.
	Name string `json:"name"`
	// Data is the event payload.
	Data string `json:"data"`
}

// SubOrchCompletedItem carries a sub-orchestration's result to its parent.
type SubOrchCompletedItem struct {
	// ParentInstance is the parent instance id, the item's target.
	ParentInstance string `json:"parent_instance"`
	// ParentExecutionID is the parent execution that scheduled the child.
	ParentExecutionID uint64 `json:"parent_execution_id"`
	// ParentID is the parent's SubOrchestrationScheduled event id.
	ParentID uint64 `json:"parent_id"`
	// Result is the child's output.
	Result string `json:"result"`
}

// SubOrchFailedItem carries a sub-orchestration's failure to its parent.
type SubOrchFailedItem struct {
	// ParentInstance is the parent instance id, the item's target.
	ParentInstance string `json:"parent_instance"`
	// ParentExecutionID is the parent execution that scheduled the child.
	ParentExecutionID uint64 `json:"parent_execution_id"`
	// ParentID is the parent's SubOrchestrationScheduled event id.
	ParentID uint64 `json:"parent_id"`
	// Details says why the child failed; required.
	Details ErrorDetails `json:"details"`
}

// CancelInstanceItem asks an instance to cancel.
type CancelInstanceItem struct {
	// Instance is the instance to cancel.
	Instance string `json:"instance"`
	// Reason is the cancellation reason.
	Reason string `json:"reason"`
}

// ContinueAsNewItem starts the next execution of an instance.
type ContinueAsNewItem struct {
	// Instance is the instance that continues.
	Instance string `json:"instance"`
	// Orchestration is the orchestration name.
	Orchestration string `json:"orchestration"`
	// Input is the next execution's input.
	Input string `json:"input"`
	// Version is the next execution's orchestration version; nil when
	// none was given.
	Version *string `json:"version"`
	// CarryForwardEvents are unconsumed queue messages for the next
	// execution. Always encoded, as [] when empty.
	CarryForwardEvents []CarryForwardEvent `json:"carry_forward_events" wire:"default"`
	// InitialCustomStatus is the custom status carried into the next
	// execution; nil (omitted) when there is none.
	InitialCustomStatus *string `json:"initial_custom_status,omitempty"`
}

// QueueMessageItem delivers a message to a named FIFO mailbox of an
// instance. If the instance never starts, the provider drops it.
type QueueMessageItem struct {
	// Instance is the target instance.
	Instance string `json:"instance"`
	// Name is the mailbox (queue) name.
	Name string `json:"name"`
	// Data is the message payload.
	Data string `json:"data"`
}

// Kind names of the work item variants, as they appear on the wire.
const (
	KindStartOrchestration = "StartOrchestration"
	KindActivityExecute    = "ActivityExecute"
	KindActivityCompleted  = "ActivityCompleted"
	KindActivityFailed     = "ActivityFailed"
	KindTimerFired         = "TimerFired"
	KindExternalRaised     = "ExternalRaised"
	KindSubOrchCompleted   = "SubOrchCompleted"
	KindSubOrchFailed      = "SubOrchFailed"
	KindCancelInstance     = "CancelInstance"
	KindContinueAsNew      = "ContinueAsNew"
	KindQueueMessage       = "QueueMessage"
)

func (StartOrchestrationItem) isWorkItem() {}
func (ActivityExecuteItem) isWorkItem()    {}
func (ActivityCompletedItem) isWorkItem()  {}
func (ActivityFailedItem) isWorkItem()     {}
func (TimerFiredItem) isWorkItem()         {}
func (ExternalRaisedItem) isWorkItem()     {}
func (SubOrchCompletedItem) isWorkItem()   {}
func (SubOrchFailedItem) isWorkItem()      {}
func (CancelInstanceItem) isWorkItem()     {}
func (ContinueAsNewItem) isWorkItem()      {}
func (QueueMessageItem) isWorkItem()       {}

// Kind returns "StartOrchestration".
func (StartOrchestrationItem) Kind() string { return KindStartOrchestration }

// Kind returns "ActivityExecute".
func (ActivityExecuteItem) Kind() string { return KindActivityExecute }

// Kind returns "ActivityCompleted".
func (ActivityCompletedItem) Kind() string { return KindActivityCompleted }

// Kind returns "ActivityFailed".
func (ActivityFailedItem) Kind() string { return KindActivityFailed }

// Kind returns "TimerFired".
func (TimerFiredItem) Kind() string { return KindTimerFired }

// Kind returns "ExternalRaised".
func (ExternalRaisedItem) Kind() string { return KindExternalRaised }

// Kind returns "SubOrchCompleted".
func (SubOrchCompletedItem) Kind() string { return KindSubOrchCompleted }

// Kind returns "SubOrchFailed".
func (SubOrchFailedItem) Kind() string { return KindSubOrchFailed }

// Kind returns "CancelInstance".
func (CancelInstanceItem) Kind() string { return KindCancelInstance }

// Kind returns "ContinueAsNew".
func (ContinueAsNewItem) Kind() string { return KindContinueAsNew }

// Kind returns "QueueMessage".
func (QueueMessageItem) Kind() string { return KindQueueMessage }

// TargetInstance returns w.Instance.
func (w StartOrchestrationItem) TargetInstance() string { return w.Instance }

// TargetInstance returns w.Instance.
func (w ActivityExecuteItem) TargetInstance() string { return w.Instance }

// TargetInstance returns w.Instance.
func (w ActivityCompletedItem) TargetInstance() string { return w.Instance }

// TargetInstance returns w.Instance.
func (w ActivityFailedItem) TargetInstance() string { return w.Instance }

// TargetInstance returns w.Instance.
func (w TimerFiredItem) TargetInstance() string { return w.Instance }

// TargetInstance returns w.Instance.
func (w ExternalRaisedItem) TargetInstance() string { return w.Instance }

// TargetInstance returns the parent instance.
func (w SubOrchCompletedItem) TargetInstance() string { return w.ParentInstance }

// TargetInstance returns the parent instance.
func (w SubOrchFailedItem) TargetInstance() string { return w.ParentInstance }

// TargetInstance returns w.Instance.
func (w CancelInstanceItem) TargetInstance() string { return w.Instance }

// TargetInstance returns w.Instance.
func (w ContinueAsNewItem) TargetInstance() string { return w.Instance }

// TargetInstance returns w.Instance.
func (w QueueMessageItem) TargetInstance() string { return w.Instance }

// MarshalJSON encodes {"StartOrchestration":{...}}.
func (w StartOrchestrationItem) MarshalJSON() ([]byte, error) {
	type plain StartOrchestrationItem
	return encodeTagged(w.Kind(), plain(w))
}

// MarshalJSON encodes {"ActivityExecute":{...}}.
func (w ActivityExecuteItem) MarshalJSON() ([]byte, error) {
	type plain ActivityExecuteItem
	return encodeTagged(w.Kind(), plain(w))
}

// MarshalJSON encodes {"ActivityCompleted":{...}}.
func (w ActivityCompletedItem) MarshalJSON() ([]byte, error) {
	type plain ActivityCompletedItem
	return encodeTagged(w.Kind(), plain(w))
}

type activityFailedWire struct {
	Instance    string  `json:"instance"`
	ExecutionID uint64  `json:"execution_id"`
	ID          uint64  `json:"id"`
	Details     details `json:"details"`
}

// MarshalJSON encodes {"ActivityFailed":{...}}.
func (w ActivityFailedItem) MarshalJSON() ([]byte, error) {
	return encodeTagged(w.Kind(), activityFailedWire{w.Instance, w.ExecutionID, w.ID, details{w.Details}})
}

// MarshalJSON encodes {"TimerFired":{...}}.
func (w TimerFiredItem) MarshalJSON() ([]byte, error) {
	type plain TimerFiredItem
	return encodeTagged(w.Kind(), plain(w))
}

// MarshalJSON encodes {"ExternalRaised":{...}}.
func (w ExternalRaisedItem) MarshalJSON() ([]byte, error) {
	type plain ExternalRaisedItem
	return encodeTagged(w.Kind(), plain(w))
}

// MarshalJSON encodes {"SubOrchCompleted":{...}}.
func (w SubOrchCompletedItem) MarshalJSON() ([]byte, error) {
	type plain SubOrchCompletedItem
	return encodeTagged(w.Kind(), plain(w))
}

type subOrchFailedWire struct {
	ParentInstance    string  `json:"parent_instance"`
	ParentExecutionID uint64  `json:"parent_execution_id"`
	ParentID          uint64  `json:"parent_id"`
	Details           details `json:"details"`
}

// MarshalJSON encodes {"SubOrchFailed":{...}}.
func (w SubOrchFailedItem) MarshalJSON() ([]byte, error) {
	return encodeTagged(w.Kind(), subOrchFailedWire{w.ParentInstance, w.ParentExecutionID, w.ParentID, details{w.Details}})
}

// MarshalJSON encodes {"CancelInstance":{...}}.
func (w CancelInstanceItem) MarshalJSON() ([]byte, error) {
	type plain CancelInstanceItem
	return encodeTagged(w.Kind(), plain(w))
}

// MarshalJSON encodes {"ContinueAsNew":{...}}; carry_forward_events is
// always present.
func (w ContinueAsNewItem) MarshalJSON() ([]byte, error) {
	type plain ContinueAsNewItem
	if w.CarryForwardEvents == nil {
		w.CarryForwardEvents = []CarryForwardEvent{}
	}
	return encodeTagged(w.Kind(), plain(w))
}

// MarshalJSON encodes {"QueueMessage":{...}}.
func (w QueueMessageItem) MarshalJSON() ([]byte, error) {
	type plain QueueMessageItem
	return encodeTagged(w.Kind(), plain(w))
}

// MarshalWorkItem encodes a work item in duroxide's wire format. A nil item
// is an error wrapping [ErrInvalidInput].
func MarshalWorkItem(item WorkItem) ([]byte, error) {
	if item == nil {
		return nil, fmt.Errorf("work item: %w: nil", ErrInvalidInput)
	}
	return json.Marshal(item)
}

// UnmarshalWorkItem decodes a work item from duroxide's wire format. An
// unknown variant is an error wrapping [ErrUnknownKind]; missing or null
// required fields are errors too.
func UnmarshalWorkItem(data []byte) (WorkItem, error) {
	const what = "work item"
	tag, body, err := decodeTagged(data, what)
	if err != nil {
		return nil, err
	}
	if body == nil {
		return nil, fmt.Errorf("%s: %q needs fields", what, tag)
	}
	item, err := decodeWorkItemBody(tag, body)
	if err != nil {
		return nil, err
	}
	return item, nil
}

func decodeWorkItemBody(tag string, body []byte) (WorkItem, error) {
	const what = "work item"
	switch tag {
	case KindStartOrchestration:
		type plain StartOrchestrationItem
		return decodeAs[StartOrchestrationItem, plain](body, what)
	case KindActivityExecute:
		type plain ActivityExecuteItem
		return decodeAs[ActivityExecuteItem, plain](body, what)
	case KindActivityCompleted:
		type plain ActivityCompletedItem
		return decodeAs[ActivityCompletedItem, plain](body, what)
	case KindActivityFailed:
		var v activityFailedWire
		if err := decodeStruct(body, &v, what); err != nil {
			return nil, err
		}
		return ActivityFailedItem{v.Instance, v.ExecutionID, v.ID, v.Details.ErrorDetails}, nil
	case KindTimerFired:
		type plain TimerFiredItem
		return decodeAs[TimerFiredItem, plain](body, what)
	case KindExternalRaised:
		type plain ExternalRaisedItem
		return decodeAs[ExternalRaisedItem, plain](body, what)
	case KindSubOrchCompleted:
		type plain SubOrchCompletedItem
		return decodeAs[SubOrchCompletedItem, plain](body, what)
	case KindSubOrchFailed:
		var v subOrchFailedWire
		if err := decodeStruct(body, &v, what); err != nil {
			return nil, err
		}
		return SubOrchFailedItem{v.ParentInstance, v.ParentExecutionID, v.ParentID, v.Details.ErrorDetails}, nil
	case KindCancelInstance:
		type plain CancelInstanceItem
		return decodeAs[CancelInstanceItem, plain](body, what)
	case KindContinueAsNew:
		type plain ContinueAsNewItem
		v, err := decodeAs[ContinueAsNewItem, plain](body, what)
		if err == nil && v.CarryForwardEvents == nil {
			v.CarryForwardEvents = []CarryForwardEvent{}
		}
		return v, err
	case KindQueueMessage:
		type plain QueueMessageItem
		return decodeAs[QueueMessageItem, plain](body, what)
	default:
		return nil, unknownKind(what, tag)
	}
}
