package durable

import (
	"encoding/json"
	"fmt"
	"reflect"
)

// UntypedActivityError reports a typed call of an activity registered
// untyped, with [ActivityFunc]. Such an activity takes and returns wire
// payloads as they are; a typed call would hand it its input JSON-encoded
// (the string "hi" arrives as "\"hi\"") and decode its result as JSON. The
// call fails with this error, as the error of its future, without
// scheduling the activity; it is found only where the runtime running the
// orchestration registers the activity.
type UntypedActivityError struct {
	// Name is the activity's name.
	Name string
	// Input and Output are the Go types of the call's input and result,
	// such as "string" or "durable.Raw".
	Input, Output string
}

func (e *UntypedActivityError) Error() string {
	return fmt.Sprintf("durable: activity %s is untyped (ActivityFunc) and takes and returns wire payloads, but the call passes %s and expects %s: "+
		"call it with CallActivity[durable.Raw] and a durable.Raw input, or register it with NewActivity", e.Name, e.Input, e.Output)
}

// checkUntypedCall returns an *UntypedActivityError when ctx's registry
// holds activity name as untyped and the call with input in and result
// type Out is typed: an input or a result other than [Raw] or
// json.RawMessage.
func checkUntypedCall[Out any](ctx *OrchestrationContext, name string, in any) error {
	if ctx.reg == nil || !ctx.reg.isUntyped(name) {
		return nil
	}
	out := reflect.TypeFor[Out]()
	rawIn := false
	switch in.(type) {
	case Raw, json.RawMessage:
		rawIn = true
	}
	if rawIn && (out == rawType || out == rawMessageType) {
		return nil
	}
	return &UntypedActivityError{Name: name, Input: fmt.Sprintf("%T", in), Output: out.String()}
}
