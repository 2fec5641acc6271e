package durable

import (
	"encoding/json"
	"fmt"
	"reflect"
)

// Raw is a payload passed verbatim, without JSON encoding: what an activity
// serving a caller that sends plain strings takes and returns.
type Raw string

var (
	rawType        = reflect.TypeFor[Raw]()
	rawMessageType = reflect.TypeFor[json.RawMessage]()
)

// encode turns a value into its wire payload: Raw and json.RawMessage
// verbatim, anything else as JSON.
func encode(v any) (string, error) {
	switch v := v.(type) {
	case Raw:
		return string(v), nil
	case json.RawMessage:
		return string(v), nil
	case nil:
		return "null", nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("encode %T: %w", v, err)
	}
	return string(b), nil
}

// decode reads a wire payload into a value of type T.
func decode[T any](payload string) (T, error) {
	var out T
	switch reflect.TypeFor[T]() {
	case rawType:
		return any(Raw(payload)).(T), nil
	case rawMessageType:
		return any(json.RawMessage(payload)).(T), nil
	}
	if err := json.Unmarshal([]byte(payload), &out); err != nil {
		return out, fmt.Errorf("decode %T from %q: %w", out, truncate(payload, 64), err)
	}
	return out, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
