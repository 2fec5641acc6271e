package provider

import (
	"encoding/json"
	"fmt"
)

// ErrorDetails describes why an activity, sub-orchestration or orchestration
// failed. It is embedded in failure events and work items. The variants are
// [InfrastructureDetails], [ConfigurationDetails], [ApplicationDetails] and
// [PoisonDetails]; on the wire each is externally tagged,
// {"Application":{...}}. Decode one with [UnmarshalErrorDetails].
type ErrorDetails interface {
	// Category is "infrastructure", "configuration", "application" or
	// "poison".
	Category() string
	// IsRetryable reports whether the failure may succeed on retry.
	IsRetryable() bool
	// DisplayMessage is the text the runtime stores as the failed
	// execution's output.
	DisplayMessage() string
	isErrorDetails()
}

// InfrastructureDetails is a provider or data failure that aborted a turn
// before user code ran.
type InfrastructureDetails struct {
	// Operation names the operation that failed; "unknown" when the error
	// did not name one.
	Operation string `json:"operation"`
	// Message describes the failure.
	Message string `json:"message"`
	// Retryable reports whether the operation may succeed if retried.
	Retryable bool `json:"retryable"`
}

// ConfigErrorKind names a configuration failure.
type ConfigErrorKind string

// ConfigNondeterminism is the only configuration failure kind: replayed code
// made different decisions than the recorded history.
const ConfigNondeterminism ConfigErrorKind = "Nondeterminism"

// ConfigurationDetails is a deployment problem, such as nondeterminism.
type ConfigurationDetails struct {
	// Kind is the failure kind; always [ConfigNondeterminism].
	Kind ConfigErrorKind `json:"kind"`
	// Resource names what the problem concerns; DisplayMessage uses it
	// when Message is nil.
	Resource string `json:"resource"`
	// Message describes the problem; nil when there is no description.
	Message *string `json:"message"`
}

// AppErrorCode names an application failure kind.
type AppErrorCode string

// Application failure kinds.
const (
	AppActivityFailed      AppErrorCode = "ActivityFailed"
	AppOrchestrationFailed AppErrorCode = "OrchestrationFailed"
	AppPanicked            AppErrorCode = "Panicked"
	AppCancelled           AppErrorCode = "Cancelled"
)

// AppErrorKind is the kind of an application failure. Reason is set only for
// [AppCancelled]. On the wire the unit kinds are strings ("Panicked") and
// cancellation is {"Cancelled":{"reason":"..."}}.
type AppErrorKind struct {
	// Code is the failure kind.
	Code AppErrorCode
	// Reason is the cancellation reason; "" unless Code is [AppCancelled].
	Reason string
}

// MarshalJSON encodes the kind in duroxide's shape.
func (k AppErrorKind) MarshalJSON() ([]byte, error) {
	switch k.Code {
	case AppActivityFailed, AppOrchestrationFailed, AppPanicked:
		return json.Marshal(string(k.Code))
	case AppCancelled:
		return encodeTagged(string(AppCancelled), struct {
			Reason string `json:"reason"`
		}{k.Reason})
	default:
		return nil, fmt.Errorf("application error kind: %w %q", ErrUnknownKind, k.Code)
	}
}

// UnmarshalJSON decodes the kind; unknown kinds are an error.
func (k *AppErrorKind) UnmarshalJSON(data []byte) error {
	tag, body, err := decodeTagged(data, "application error kind")
	if err != nil {
		return err
	}
	switch AppErrorCode(tag) {
	case AppActivityFailed, AppOrchestrationFailed, AppPanicked:
		if body != nil {
			return fmt.Errorf("application error kind: %q takes no fields", tag)
		}
		*k = AppErrorKind{Code: AppErrorCode(tag)}
		return nil
	case AppCancelled:
		var v struct {
			Reason string `json:"reason"`
		}
		if body == nil {
			return fmt.Errorf("application error kind: %q needs a reason", tag)
		}
		if err := decodeStruct(body, &v, "application error kind"); err != nil {
			return err
		}
		*k = AppErrorKind{Code: AppCancelled, Reason: v.Reason}
		return nil
	default:
		return unknownKind("application error kind", tag)
	}
}

// ApplicationDetails is a failure of user code: an activity or orchestration
// error, a panic, or a cancellation.
type ApplicationDetails struct {
	// Kind is the failure kind (with the reason, for cancellations).
	Kind AppErrorKind `json:"kind"`
	// Message is the error or panic message.
	Message string `json:"message"`
	// Retryable reports whether the failure may succeed on retry.
	Retryable bool `json:"retryable"`
}

// PoisonDetails records a message that exceeded the runtime's attempt limit.
type PoisonDetails struct {
	// AttemptCount is the delivery count that exceeded MaxAttempts.
	AttemptCount uint32 `json:"attempt_count"`
	// MaxAttempts is the runtime's attempt limit; a message whose attempt
	// count exceeds it is poisoned.
	MaxAttempts uint32 `json:"max_attempts"`
	// MessageType says what was poisoned; it must not be nil.
	MessageType PoisonMessageType `json:"message_type"`
	// Message is free text about the poisoned message.
	Message string `json:"message"`
	// Cause, when the runtime knows it, says why the attempts failed, such
	// as an orchestration that no worker that fetched it has registered.
	// Not in duroxide's form: omitted from the wire when empty.
	Cause string `json:"cause,omitempty"`
}

// PoisonMessageType says what was poisoned: [PoisonOrchestration],
// [PoisonActivity] or [PoisonFailedDeserialization]. Externally tagged on the
// wire.
type PoisonMessageType interface {
	isPoisonMessageType()
}

// PoisonOrchestration is a poisoned orchestration turn.
type PoisonOrchestration struct {
	// Instance is the instance id.
	Instance string `json:"instance"`
	// ExecutionID is the execution whose turn was poisoned.
	ExecutionID uint64 `json:"execution_id"`
}

// PoisonActivity is a poisoned activity execution.
type PoisonActivity struct {
	// Instance is the instance that scheduled the activity.
	Instance string `json:"instance"`
	// ExecutionID is the execution that scheduled it.
	ExecutionID uint64 `json:"execution_id"`
	// ActivityName is the activity's name.
	ActivityName string `json:"activity_name"`
	// ActivityID is the event id of its ActivityScheduled event.
	ActivityID uint64 `json:"activity_id"`
}

// PoisonFailedDeserialization is history that repeatedly failed to decode.
type PoisonFailedDeserialization struct {
	// Instance is the instance id.
	Instance string `json:"instance"`
	// ExecutionID is the execution whose history failed to decode.
	ExecutionID uint64 `json:"execution_id"`
	// Error is the decode error text.
	Error string `json:"error"`
}

func (PoisonOrchestration) isPoisonMessageType()         {}
func (PoisonActivity) isPoisonMessageType()              {}
func (PoisonFailedDeserialization) isPoisonMessageType() {}

// MarshalJSON encodes the value as {"Orchestration":{...}}.
func (p PoisonOrchestration) MarshalJSON() ([]byte, error) {
	type plain PoisonOrchestration
	return encodeTagged("Orchestration", plain(p))
}

// MarshalJSON encodes the value as {"Activity":{...}}.
func (p PoisonActivity) MarshalJSON() ([]byte, error) {
	type plain PoisonActivity
	return encodeTagged("Activity", plain(p))
}

// MarshalJSON encodes the value as {"FailedDeserialization":{...}}.
func (p PoisonFailedDeserialization) MarshalJSON() ([]byte, error) {
	type plain PoisonFailedDeserialization
	return encodeTagged("FailedDeserialization", plain(p))
}

func decodePoisonMessageType(data []byte) (PoisonMessageType, error) {
	const what = "poison message type"
	tag, body, err := decodeTagged(data, what)
	if err != nil {
		return nil, err
	}
	if body == nil {
		return nil, fmt.Errorf("%s: %q needs fields", what, tag)
	}
	var v PoisonMessageType
	switch tag {
	case "Orchestration":
		type plain PoisonOrchestration
		v, err = decodeAs[PoisonOrchestration, plain](body, what)
	case "Activity":
		type plain PoisonActivity
		v, err = decodeAs[PoisonActivity, plain](body, what)
	case "FailedDeserialization":
		type plain PoisonFailedDeserialization
		v, err = decodeAs[PoisonFailedDeserialization, plain](body, what)
	default:
		err = unknownKind(what, tag)
	}
	if err != nil {
		return nil, err
	}
	return v, nil
}

func (InfrastructureDetails) isErrorDetails() {}
func (ConfigurationDetails) isErrorDetails()  {}
func (ApplicationDetails) isErrorDetails()    {}
func (PoisonDetails) isErrorDetails()         {}

// Category returns "infrastructure".
func (InfrastructureDetails) Category() string { return "infrastructure" }

// Category returns "configuration".
func (ConfigurationDetails) Category() string { return "configuration" }

// Category returns "application".
func (ApplicationDetails) Category() string { return "application" }

// Category returns "poison".
func (PoisonDetails) Category() string { return "poison" }

// IsRetryable returns d.Retryable.
func (d InfrastructureDetails) IsRetryable() bool { return d.Retryable }

// IsRetryable returns false: configuration problems need a deployment fix.
func (ConfigurationDetails) IsRetryable() bool { return false }

// IsRetryable returns d.Retryable.
func (d ApplicationDetails) IsRetryable() bool { return d.Retryable }

// IsRetryable returns false: poison is never retried.
func (PoisonDetails) IsRetryable() bool { return false }

// DisplayMessage returns "infrastructure:<operation>: <message>".
func (d InfrastructureDetails) DisplayMessage() string {
	return "infrastructure:" + d.Operation + ": " + d.Message
}

// DisplayMessage returns "nondeterministic: <message>", or names the
// resource when there is no message.
func (d ConfigurationDetails) DisplayMessage() string {
	if d.Message != nil {
		return "nondeterministic: " + *d.Message
	}
	return "nondeterministic in " + d.Resource
}

// DisplayMessage returns "canceled: <reason>" for cancellations,
// "orchestration panicked: <message>" for panics, otherwise the message.
func (d ApplicationDetails) DisplayMessage() string {
	switch d.Kind.Code {
	case AppCancelled:
		return canceledPrefix + d.Kind.Reason
	case AppPanicked:
		return "orchestration panicked: " + d.Message
	default:
		return d.Message
	}
}

// DisplayMessage describes what was poisoned and after how many attempts,
// followed by the cause when one is known.
func (d PoisonDetails) DisplayMessage() string {
	if d.Cause != "" {
		return d.attemptsMessage() + ": " + d.Cause
	}
	return d.attemptsMessage()
}

func (d PoisonDetails) attemptsMessage() string {
	switch m := d.MessageType.(type) {
	case PoisonOrchestration:
		return fmt.Sprintf("poison: orchestration %s exceeded %d attempts (max %d)", m.Instance, d.AttemptCount, d.MaxAttempts)
	case PoisonActivity:
		return fmt.Sprintf("poison: activity %s#%d exceeded %d attempts (max %d)", m.ActivityName, m.ActivityID, d.AttemptCount, d.MaxAttempts)
	case PoisonFailedDeserialization:
		return fmt.Sprintf("poison: orchestration %s history deserialization failed after %d attempts (max %d): %s", m.Instance, d.AttemptCount, d.MaxAttempts, m.Error)
	default:
		return fmt.Sprintf("poison: exceeded %d attempts (max %d)", d.AttemptCount, d.MaxAttempts)
	}
}

// MarshalJSON encodes the value as {"Infrastructure":{...}}.
func (d InfrastructureDetails) MarshalJSON() ([]byte, error) {
	type plain InfrastructureDetails
	return encodeTagged("Infrastructure", plain(d))
}

// MarshalJSON encodes the value as {"Configuration":{...}}.
func (d ConfigurationDetails) MarshalJSON() ([]byte, error) {
	if d.Kind != ConfigNondeterminism {
		return nil, fmt.Errorf("configuration error kind: %w %q", ErrUnknownKind, d.Kind)
	}
	type plain ConfigurationDetails
	return encodeTagged("Configuration", plain(d))
}

// MarshalJSON encodes the value as {"Application":{...}}.
func (d ApplicationDetails) MarshalJSON() ([]byte, error) {
	type plain ApplicationDetails
	return encodeTagged("Application", plain(d))
}

// MarshalJSON encodes the value as {"Poison":{...}}.
func (d PoisonDetails) MarshalJSON() ([]byte, error) {
	if d.MessageType == nil {
		return nil, fmt.Errorf("poison details: %w: message type is nil", ErrInvalidInput)
	}
	type plain PoisonDetails
	return encodeTagged("Poison", plain(d))
}

// UnmarshalErrorDetails decodes externally tagged error details. An unknown
// variant or kind is an error wrapping [ErrUnknownKind].
func UnmarshalErrorDetails(data []byte) (ErrorDetails, error) {
	const what = "error details"
	tag, body, err := decodeTagged(data, what)
	if err != nil {
		return nil, err
	}
	if body == nil {
		return nil, fmt.Errorf("%s: %q needs fields", what, tag)
	}
	d, err := decodeErrorDetailsBody(tag, body)
	if err != nil {
		return nil, err
	}
	return d, nil
}

func decodeErrorDetailsBody(tag string, body []byte) (ErrorDetails, error) {
	const what = "error details"
	switch tag {
	case "Infrastructure":
		type plain InfrastructureDetails
		return decodeAs[InfrastructureDetails, plain](body, what)
	case "Configuration":
		var v ConfigurationDetails
		type plain ConfigurationDetails
		if err := decodeStruct(body, (*plain)(&v), what); err != nil {
			return nil, err
		}
		if v.Kind != ConfigNondeterminism {
			return nil, fmt.Errorf("configuration error kind: %w %q", ErrUnknownKind, v.Kind)
		}
		return v, nil
	case "Application":
		type plain ApplicationDetails
		return decodeAs[ApplicationDetails, plain](body, what)
	case "Poison":
		var shadow struct {
			AttemptCount uint32          `json:"attempt_count"`
			MaxAttempts  uint32          `json:"max_attempts"`
			MessageType  json.RawMessage `json:"message_type"`
			Message      string          `json:"message"`
			Cause        string          `json:"cause,omitempty"`
		}
		if err := decodeStruct(body, &shadow, what); err != nil {
			return nil, err
		}
		mt, err := decodePoisonMessageType(shadow.MessageType)
		if err != nil {
			return nil, err
		}
		return PoisonDetails{AttemptCount: shadow.AttemptCount, MaxAttempts: shadow.MaxAttempts, MessageType: mt, Message: shadow.Message, Cause: shadow.Cause}, nil
	default:
		return nil, unknownKind(what, tag)
	}
}

// details is the JSON carrier for an ErrorDetails field inside a decoded
// work item or event.
type details struct{ ErrorDetails }

// MarshalJSON encodes the carried details; nil details are an error (the
// field is required).
func (d details) MarshalJSON() ([]byte, error) {
	if d.ErrorDetails == nil {
		return nil, fmt.Errorf("error details: %w: nil", ErrInvalidInput)
	}
	return json.Marshal(d.ErrorDetails)
}

// UnmarshalJSON decodes the carried details.
func (d *details) UnmarshalJSON(data []byte) error {
	v, err := UnmarshalErrorDetails(data)
	if err != nil {
		return err
	}
	d.ErrorDetails = v
	return nil
}
