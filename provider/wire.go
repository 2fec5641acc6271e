package provider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
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
	fields, err := objectFields(body, what)
	if err != nil {
		return err
	}
	return decodeFields(body, fields, v, what)
}

// objectFields splits the JSON object body into its fields; null and
// anything but an object are errors. A body [scanObject] cannot split
// goes through encoding/json, which also says what is wrong with it.
func objectFields(body []byte, what string) (jsonFields, error) {
	if fields, ok := scanObject(body); ok {
		return fields, nil
	}
	var decoded map[string]json.RawMessage
	if err := json.Unmarshal(body, &decoded); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if decoded == nil {
		return nil, fmt.Errorf("%s: null where an object is required", what)
	}
	fields := make(jsonFields, 0, len(decoded))
	for name, value := range decoded {
		fields = append(fields, jsonField{name, value})
	}
	return fields, nil
}

// decodeFields is decodeStruct for a body already split into fields. A
// struct of named fields alone is filled field by field from fields, as
// encoding/json would fill it but with names matched exactly (as serde
// matches them); any other is decoded from body.
func decodeFields(body []byte, fields jsonFields, v any, what string) error {
	t := reflect.TypeOf(v).Elem()
	if err := checkRequired(fields, t, what); err != nil {
		return err
	}
	plan, ok := fieldPlanOf(t)
	if !ok {
		if err := json.Unmarshal(body, v); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	}
	sv := reflect.ValueOf(v).Elem()
	for _, f := range plan {
		raw, ok := fields.get(f.name)
		if !ok || string(bytes.TrimSpace(raw)) == "null" {
			continue // as encoding/json: null leaves a value as it is
		}
		if err := decodeField(raw, sv.Field(f.index)); err != nil {
			return fmt.Errorf("%s: field %q: %w", what, f.name, err)
		}
	}
	return nil
}

// decodeField decodes raw into the struct field dst; strings, integers
// and pointers to them take the short way.
func decodeField(raw json.RawMessage, dst reflect.Value) error {
	switch dst.Type() {
	case reflect.TypeFor[string]():
		return rawString(raw, dst.Addr().Interface().(*string))
	case reflect.TypeFor[uint64]():
		return rawUint(raw, dst.Addr().Interface().(*uint64))
	case reflect.TypeFor[*string]():
		var v string
		if err := rawString(raw, &v); err != nil {
			return err
		}
		dst.Set(reflect.ValueOf(&v))
		return nil
	case reflect.TypeFor[*uint64]():
		var v uint64
		if err := rawUint(raw, &v); err != nil {
			return err
		}
		dst.Set(reflect.ValueOf(&v))
		return nil
	default:
		return json.Unmarshal(raw, dst.Addr().Interface())
	}
}

// plannedField is one field of a struct decoded field by field.
type plannedField struct {
	name  string
	index int
}

// fieldPlan is how decodeFields fills a struct type: field by field, or
// (ok false) by encoding/json.
type fieldPlan struct {
	fields []plannedField
	ok     bool
}

var fieldPlans sync.Map // reflect.Type -> fieldPlan

// fieldPlanOf returns the fields of t to decode one by one, or false when
// t has an embedded field or one without a JSON name (encoding/json's
// rules for those are left to encoding/json).
func fieldPlanOf(t reflect.Type) ([]plannedField, bool) {
	if cached, ok := fieldPlans.Load(t); ok {
		plan := cached.(fieldPlan)
		return plan.fields, plan.ok
	}
	plan := fieldPlan{ok: true}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || f.Tag.Get("json") == "-" {
			continue
		}
		if f.Anonymous || name == "" {
			plan = fieldPlan{}
			break
		}
		plan.fields = append(plan.fields, plannedField{name: name, index: i})
	}
	fieldPlans.Store(t, plan)
	return plan.fields, plan.ok
}

// checkRequired checks that fields holds every required field of the
// struct type t, none of them null.
func checkRequired(fields jsonFields, t reflect.Type, what string) error {
	for _, name := range requiredFields(t) {
		raw, ok := fields.get(name)
		if !ok {
			return fmt.Errorf("%s: missing field %q", what, name)
		}
		if string(bytes.TrimSpace(raw)) == "null" {
			return fmt.Errorf("%s: field %q is null", what, name)
		}
	}
	return nil
}

// rawUint decodes the JSON value raw, taken from a parsed object, into a
// uint64 as encoding/json would; digits alone take the short way.
func rawUint(raw json.RawMessage, dst *uint64) error {
	if n, err := strconv.ParseUint(string(raw), 10, 64); err == nil {
		*dst = n
		return nil
	}
	return json.Unmarshal(raw, dst)
}

// rawString decodes the JSON value raw, taken from a parsed object (so
// valid JSON), into a string as encoding/json would. A valid UTF-8 string
// whose escapes are all of one character (\" \\ \/ \b \f \n \r \t: a
// payload that is itself JSON has many) takes the short way.
func rawString(raw json.RawMessage, dst *string) error {
	n := len(raw)
	if n < 2 || raw[0] != '"' || raw[n-1] != '"' || !utf8.Valid(raw) {
		return json.Unmarshal(raw, dst)
	}
	body := raw[1 : n-1]
	esc := bytes.IndexByte(body, '\\')
	if esc < 0 {
		*dst = string(body)
		return nil
	}
	out := make([]byte, 0, len(body))
	for esc >= 0 {
		out = append(out, body[:esc]...)
		if esc+1 >= len(body) {
			return json.Unmarshal(raw, dst)
		}
		switch c := body[esc+1]; c {
		case '"', '\\', '/':
			out = append(out, c)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		default: // \u escapes: encoding/json
			return json.Unmarshal(raw, dst)
		}
		body = body[esc+2:]
		esc = bytes.IndexByte(body, '\\')
	}
	*dst = string(append(out, body...))
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
