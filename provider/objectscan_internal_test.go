package provider

import (
	"bytes"
	"encoding/json"
	"testing"
)

// objectSeeds are objects of the shapes the wire format has, and edge cases
// of JSON's grammar.
var objectSeeds = []string{
	`{"event_id":2,"source_event_id":null,"instance_id":"order-1","execution_id":1,"timestamp_ms":1790000000000,"duroxide_version":"0.1.29","type":"ActivityScheduled","name":"Hello","input":"\"Tokyo\""}`,
	`{"event_id":3,"type":"ActivityFailed","details":{"Application":{"kind":"Panicked","message":"boom \u00e9","retryable":false}}}`,
	` { "a" : [1, {"b": "]}"}, -0.5e+3] , "c":true,"d":false,"e":null, "a": 7 } `,
	`{}`, `{ }`, `null`, `[]`, `"x"`, `{"a":1,}`, `{"a" 1}`, `{"a":01}`, `{"a":1.}`, `{"a":-}`, `{"a":1e}`,
	`{"a":"\x"}`, `{"a":"\u12"}`, `{"a":"tab	in"}`, `{"a\"b":1}`, `{"é":1}`, `{"a":tru}`, `{"a":[1,2}`,
	`{"a":{"b":[}}`, `{"a":1} x`, `{"a":"\ud800"}`, "{\"a\":\"\xff\"}", `{"a":1`, `{"a":`, `{"a"`, `{`,
}

// FuzzScanObject: whatever scanObject splits, encoding/json decodes without
// error into the same fields.
func FuzzScanObject(f *testing.F) {
	for _, s := range objectSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fields, ok := scanObject(body)
		if !ok {
			return
		}
		var want map[string]json.RawMessage
		if err := json.Unmarshal(body, &want); err != nil || want == nil {
			t.Fatalf("scanObject split %q, which encoding/json rejects (%v) or reads as null", body, err)
		}
		names := map[string]bool{}
		for _, f := range fields {
			names[f.name] = true
		}
		if len(names) != len(want) {
			t.Fatalf("%q: %d distinct names, encoding/json has %d", body, len(names), len(want))
		}
		for name, value := range want {
			got, ok := fields.get(name)
			if !ok || !bytes.Equal(got, value) {
				t.Fatalf("%q: field %q is %q (present %v), encoding/json has %q", body, name, got, ok, value)
			}
		}
	})
}

// TestScanObjectSplitsWhatTheWireFormatWrites: the events and work items
// this package encodes take the short way.
func TestScanObjectSplitsWhatTheWireFormatWrites(t *testing.T) {
	source := uint64(2)
	events := []Event{
		{EventID: 2, InstanceID: "order-1", ExecutionID: 1, TimestampMs: 1, DuroxideVersion: "0.1.29", Kind: ActivityScheduled{Name: "Hello", Input: `"Tokyo"`}},
		{EventID: 3, SourceEventID: &source, InstanceID: "order-1", ExecutionID: 1, TimestampMs: 1, DuroxideVersion: "0.1.29", Kind: ActivityCompleted{Result: "line\nbreak \"quoted\" \\ / \t é"}},
		{EventID: 4, SourceEventID: &source, InstanceID: "order-1", ExecutionID: 1, TimestampMs: 1, DuroxideVersion: "0.1.29", Kind: ActivityFailed{Details: ApplicationDetails{Kind: AppErrorKind{Code: AppCancelled, Reason: "boom"}, Message: "é"}}},
		{EventID: 5, InstanceID: "order-1", ExecutionID: 1, TimestampMs: 1, DuroxideVersion: "0.1.29", Kind: KeyValuesCleared{}},
	}
	for _, e := range events {
		data, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := scanObject(data); !ok {
			t.Errorf("scanObject left %s to encoding/json", data)
		}
		var back Event
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		again, _ := json.Marshal(back)
		if !bytes.Equal(again, data) {
			t.Errorf("round trip changed the event:\n %s\n %s", data, again)
		}
	}
}

// FuzzRawString: rawString decodes every valid JSON string as
// encoding/json does.
func FuzzRawString(f *testing.F) {
	for _, s := range []string{`"plain"`, `"\"Tokyo\""`, `"a\\b\/c\b\f\n\r\t"`, `"\u00e9\ud83d\ude00"`, `"\ud800"`, "\"\xff\"", `"ends\\"`, `""`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		var want string
		wantErr := json.Unmarshal(raw, &want)
		var got string
		err := rawString(raw, &got)
		if (err != nil) != (wantErr != nil) || got != want {
			t.Fatalf("rawString(%q) = %q, %v; encoding/json: %q, %v", raw, got, err, want, wantErr)
		}
	})
}
