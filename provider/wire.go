package provider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
)

// This file holds the JSON mechanics shared by work items, events and error
// details. The wire format is serde_json's: externally tagged enums
// ({"Variant":{...}}), the event kind flattened with a "type" tag, and
// required fields that must be present and non-null.

// encodeTagged returns {"tag":body} where body is v encoded with
// encoding/json.
func encodeTagged(tag string, v any) ([]byte, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Grow(len(tag) + len(body) + 5)
	b.WriteString(`{"`)
	b.WriteString(tag)
	b.WriteString(`":`)
	b.Write(body)
	b.WriteByte('}')
	return b.Bytes(), nil
}

// decodeTagged splits an externally tagged enum value into its tag and
// body. A bare JSON string is a unit variant and yields a nil body.
func decodeTagged(data []byte, what string) (string, json.RawMessage, error) {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '"' {
		var tag string
		if err := json.Unmarshal(data, &tag); err != nil {
			return "", nil, fmt.Errorf("%s: %w", what, err)
		}
		return tag, nil, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return "", nil, fmt.Errorf("%s: %w", what, err)
	}
	if fields == nil {
		return "", nil, fmt.Errorf("%s: null is not a %s", what, what)
	}
	if len(fields) != 1 {
		return "", nil, fmt.Errorf("%s: want an object with exactly one variant key, got %d keys", what, len(fields))
	}
	var tag string
	var body json.RawMessage
	for tag, body = range fields {
	}
	return tag, body, nil
}

// unknownKind returns the error for a variant tag this version does not know.
func unknownKind(what, tag string) error {
	return fmt.Errorf("%s: %w %q", what, ErrUnknownKind, tag)
}

// decodeStruct decodes the JSON object body into v (a pointer to a struct)
// after checking that every required field is present and not null. A field
// is required unless it is a pointer, is tagged omitempty or omitzero, or
// carries the struct tag `wire:"default"` (serde's #[serde(default)]).
func decodeStruct(body []byte, v any, what string) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if fields == nil {
		return fmt.Errorf("%s: null where an object is required", what)
	}
	for _, name := range requiredFields(reflect.TypeOf(v).Elem()) {
		raw, ok := fields[name]
		if !ok {
			return fmt.Errorf("%s: missing field %q", what, name)
		}
		if string(bytes.TrimSpace(raw)) == "null" {
			return fmt.Errorf("%s: field %q is null", what, name)
		}
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// decodeAs decodes body into a T through P, a method-free struct type with
// T's fields (so that T's own MarshalJSON/UnmarshalJSON do not recurse).
func decodeAs[T any, P any](body []byte, what string) (T, error) {
	var v P
	if err := decodeStruct(body, &v, what); err != nil {
		var zero T
		return zero, err
	}
	var out T
	reflect.ValueOf(&out).Elem().Set(reflect.ValueOf(v).Convert(reflect.TypeOf(out)))
	return out, nil
}

var requiredCache sync.Map // reflect.Type -> []string

func requiredFields(t reflect.Type) []string {
	if cached, ok := requiredCache.Load(t); ok {
		return cached.([]string)
	}
	var names []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if !f.IsExported() || tag == "-" || f.Tag.Get("wire") == "default" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		if f.Type.Kind() == reflect.Pointer || strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero") {
			continue
		}
		names = append(names, name)
	}
	requiredCache.Store(t, names)
	return names
}

// CarryForwardEvent is one queued event carried into the next execution by
// continue-as-new. On the wire it is a two-element array [name, data].
type CarryForwardEvent struct {
	// Name is the queue name.
	Name string
	// Data is the message payload.
	Data string
}

// MarshalJSON encodes the event as [name, data].
func (c CarryForwardEvent) MarshalJSON() ([]byte, error) {
	return json.Marshal([2]string{c.Name, c.Data})
}

// UnmarshalJSON decodes [name, data]; any other shape is an error.
func (c *CarryForwardEvent) UnmarshalJSON(data []byte) error {
	var pair []*string
	if err := json.Unmarshal(data, &pair); err != nil {
		return fmt.Errorf("carry-forward event: %w", err)
	}
	if len(pair) != 2 || pair[0] == nil || pair[1] == nil {
		return fmt.Errorf("carry-forward event: want [name, data], got %s", data)
	}
	c.Name, c.Data = *pair[0], *pair[1]
	return nil
}
