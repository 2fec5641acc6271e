package provider

import (
	"encoding/json"
	"reflect"
	"strings"
)

// jsonFields are the fields of a JSON object, in the order given.
type jsonFields []jsonField

// jsonField is one field of a JSON object: its name and its value as
// given.
type jsonField struct {
	name  string
	value json.RawMessage
}

// get returns the value of the field name; of a name given twice, the
// last (as encoding/json decodes it).
func (f jsonFields) get(name string) (json.RawMessage, bool) {
	for i := len(f) - 1; i >= 0; i-- {
		if f[i].name == name {
			return f[i].value, true
		}
	}
	return nil, false
}

// scanObject splits body, a JSON object, into its fields without copying:
// each value is the slice of body that encoding/json would give as a
// [json.RawMessage]. It handles what this package writes (keys of
// printable ASCII without escapes, any values) and reports ok only for a
// body that is valid JSON, so that a caller can leave every other body,
// and every error, to encoding/json. A key given twice keeps its last
// value, as encoding/json's does.
//
// It exists for speed: events are decoded on every history read, and
// splitting an event with encoding/json (a validation pass, then a
// decode into a map of copies) was two thirds of the decode.
func scanObject(body []byte) (fields jsonFields, ok bool) {
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return nil, false
	}
	fields = make(jsonFields, 0, 12)
	i = skipSpace(body, i+1)
	if i < len(body) && body[i] == '}' {
		return fields, skipSpace(body, i+1) == len(body)
	}
	for {
		if i >= len(body) || body[i] != '"' {
			return nil, false
		}
		keyStart := i + 1
		i = keyStart
		for i < len(body) && body[i] != '"' {
			if c := body[i]; c < 0x20 || c > 0x7e || c == '\\' {
				return nil, false // escapes and other bytes: encoding/json
			}
			i++
		}
		if i >= len(body) {
			return nil, false
		}
		name, known := headerKeys[string(body[keyStart:i])]
		if !known {
			name = string(body[keyStart:i])
		}
		i = skipSpace(body, i+1)
		if i >= len(body) || body[i] != ':' {
			return nil, false
		}
		i = skipSpace(body, i+1)
		end, valid := scanValue(body, i)
		if !valid {
			return nil, false
		}
		fields = append(fields, jsonField{name, body[i:end:end]})
		i = skipSpace(body, end)
		if i >= len(body) {
			return nil, false
		}
		switch body[i] {
		case ',':
			i = skipSpace(body, i+1)
		case '}':
			return fields, skipSpace(body, i+1) == len(body)
		default:
			return nil, false
		}
	}
}

// headerKeys holds the keys every event has, so that splitting an event
// does not allocate them again.
var headerKeys = func() map[string]string {
	keys := map[string]string{}
	t := reflect.TypeFor[eventHeader]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		keys[name] = name
	}
	return keys
}()

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// scanValue returns the end of the valid JSON value starting at b[i].
func scanValue(b []byte, i int) (end int, ok bool) {
	if i >= len(b) {
		return 0, false
	}
	switch c := b[i]; {
	case c == '"':
		return scanString(b, i)
	case c == '-' || (c >= '0' && c <= '9'):
		return scanNumber(b, i)
	case c == '{' || c == '[':
		// Nested values are rare in events (error details): find the end,
		// then let encoding/json validate that part.
		end, ok := skipNested(b, i)
		return end, ok && json.Valid(b[i:end])
	default:
		for _, lit := range [...]string{"true", "false", "null"} {
			if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
				return i + len(lit), true
			}
		}
		return 0, false
	}
}

// scanString returns the end of the JSON string starting at b[i] (a
// quote), checking its escapes and that it holds no control character.
func scanString(b []byte, i int) (end int, ok bool) {
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return 0, false
		case c == '\\':
			i++
			if i >= len(b) {
				return 0, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(b)-i < 5 {
					return 0, false
				}
				for _, h := range b[i+1 : i+5] {
					if !isHex(h) {
						return 0, false
					}
				}
				i += 4
			default:
				return 0, false
			}
		}
	}
	return 0, false
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// scanNumber returns the end of the JSON number starting at b[i]:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func scanNumber(b []byte, i int) (end int, ok bool) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = skipDigits(b, i)
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		j := skipDigits(b, i+1)
		if j == i+1 {
			return 0, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := skipDigits(b, i)
		if j == i {
			return 0, false
		}
		i = j
	}
	return i, true
}

func skipDigits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// skipNested returns the end of the object or array starting at b[i],
// matching brackets outside strings; it does not validate what is inside.
func skipNested(b []byte, i int) (end int, ok bool) {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			e, ok := scanString(b, i)
			if !ok {
				return 0, false
			}
			i = e - 1
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1, true
			}
		}
	}
	return 0, false
}
