package provider_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/duradyn/duradyn/provider"
)

func ptr[T any](v T) *T { return &v }

// The golden strings are duroxide's serde_json output, byte for byte: field
// order, nulls, omitted optional fields and tags. The first entries of each
// table are the examples printed in contract §2.

var workItemGolden = []struct {
	name string
	item provider.WorkItem
	json string
}{
	{"ContractStartOrchestration", provider.StartOrchestrationItem{Instance: "order-1", Orchestration: "ProcessOrder", Input: "{}", ExecutionID: 1},
		`{"StartOrchestration":{"instance":"order-1","orchestration":"ProcessOrder","input":"{}","version":null,"parent_instance":null,"parent_id":null,"execution_id":1}}`},
	{"ContractActivityExecuteTagged", provider.ActivityExecuteItem{Instance: "order-1", ExecutionID: 1, ID: 2, Name: "Charge", Input: "{}", Tag: ptr("gpu")},
		`{"ActivityExecute":{"instance":"order-1","execution_id":1,"id":2,"name":"Charge","input":"{}","tag":"gpu"}}`},
	{"ContractTimerFired", provider.TimerFiredItem{Instance: "order-1", ExecutionID: 1, ID: 3, FireAtMs: 1760000000000},
		`{"TimerFired":{"instance":"order-1","execution_id":1,"id":3,"fire_at_ms":1760000000000}}`},
	{"ContractActivityFailed", provider.ActivityFailedItem{Instance: "order-1", ExecutionID: 1, ID: 2, Details: provider.ApplicationDetails{Kind: provider.AppErrorKind{Code: provider.AppActivityFailed}, Message: "boom"}},
		`{"ActivityFailed":{"instance":"order-1","execution_id":1,"id":2,"details":{"Application":{"kind":"ActivityFailed","message":"boom","retryable":false}}}}`},
	{"ContractContinueAsNew", provider.ContinueAsNewItem{Instance: "loop-1", Orchestration: "Loop", Input: "5", Version: ptr("1.0.0"), CarryForwardEvents: []provider.CarryForwardEvent{{Name: "inbox", Data: "msg-9"}}},
		`{"ContinueAsNew":{"instance":"loop-1","orchestration":"Loop","input":"5","version":"1.0.0","carry_forward_events":[["inbox","msg-9"]]}}`},
	{"StartOrchestrationChild", provider.StartOrchestrationItem{Instance: "p::sub::2", Orchestration: "Child", Input: "x", Version: ptr("2.1.0"), ParentInstance: ptr("p"), ParentID: ptr(uint64(2)), ExecutionID: 1},
		`{"StartOrchestration":{"instance":"p::sub::2","orchestration":"Child","input":"x","version":"2.1.0","parent_instance":"p","parent_id":2,"execution_id":1}}`},
	{"ActivityExecuteSession", provider.ActivityExecuteItem{Instance: "i", ExecutionID: 2, ID: 7, Name: "A", Input: "in", SessionID: ptr("s-1")},
		`{"ActivityExecute":{"instance":"i","execution_id":2,"id":7,"name":"A","input":"in","session_id":"s-1"}}`},
	{"ActivityExecutePlain", provider.ActivityExecuteItem{Instance: "i", ExecutionID: 1, ID: 2, Name: "A", Input: ""},
		`{"ActivityExecute":{"instance":"i","execution_id":1,"id":2,"name":"A","input":""}}`},
	{"ActivityCompleted", provider.ActivityCompletedItem{Instance: "i", ExecutionID: 1, ID: 2, Result: "ok"},
		`{"ActivityCompleted":{"instance":"i","execution_id":1,"id":2,"result":"ok"}}`},
	{"ExternalRaised", provider.ExternalRaisedItem{Instance: "i", Name: "Approval", Data: "yes"},
		`{"ExternalRaised":{"instance":"i","name":"Approval","data":"yes"}}`},
	{"SubOrchCompleted", provider.SubOrchCompletedItem{ParentInstance: "p", ParentExecutionID: 1, ParentID: 4, Result: "r"},
		`{"SubOrchCompleted":{"parent_instance":"p","parent_execution_id":1,"parent_id":4,"result":"r"}}`},
	{"SubOrchFailedPoisonCause", provider.SubOrchFailedItem{ParentInstance: "p", ParentExecutionID: 1, ParentID: 4, Details: provider.PoisonDetails{AttemptCount: 11, MaxAttempts: 10, MessageType: provider.PoisonOrchestration{Instance: "c", ExecutionID: 1}, Message: "m", Cause: "not registered"}},
		`{"SubOrchFailed":{"parent_instance":"p","parent_execution_id":1,"parent_id":4,"details":{"Poison":{"attempt_count":11,"max_attempts":10,"message_type":{"Orchestration":{"instance":"c","execution_id":1}},"message":"m","cause":"not registered"}}}}`},
	{"SubOrchFailedPoison", provider.SubOrchFailedItem{ParentInstance: "p", ParentExecutionID: 1, ParentID: 4, Details: provider.PoisonDetails{AttemptCount: 11, MaxAttempts: 10, MessageType: provider.PoisonOrchestration{Instance: "c", ExecutionID: 1}, Message: "too many"}},
		`{"SubOrchFailed":{"parent_instance":"p","parent_execution_id":1,"parent_id":4,"details":{"Poison":{"attempt_count":11,"max_attempts":10,"message_type":{"Orchestration":{"instance":"c","execution_id":1}},"message":"too many"}}}}`},
	{"CancelInstance", provider.CancelInstanceItem{Instance: "i", Reason: "user"},
		`{"CancelInstance":{"instance":"i","reason":"user"}}`},
	{"ContinueAsNewEmpty", provider.ContinueAsNewItem{Instance: "i", Orchestration: "O", Input: "1", InitialCustomStatus: ptr("half")},
		`{"ContinueAsNew":{"instance":"i","orchestration":"O","input":"1","version":null,"carry_forward_events":[],"initial_custom_status":"half"}}`},
	{"QueueMessage", provider.QueueMessageItem{Instance: "i", Name: "inbox", Data: "m"},
		`{"QueueMessage":{"instance":"i","name":"inbox","data":"m"}}`},
}

func TestWorkItemGolden(t *testing.T) {
	kinds := map[string]bool{}
	for _, tc := range workItemGolden {
		t.Run(tc.name, func(t *testing.T) {
			got, err := provider.MarshalWorkItem(tc.item)
			if err != nil {
				t.Fatalf("MarshalWorkItem: %v", err)
			}
			if string(got) != tc.json {
				t.Fatalf("encode:\n got %s\nwant %s", got, tc.json)
			}
			back, err := provider.UnmarshalWorkItem([]byte(tc.json))
			if err != nil {
				t.Fatalf("UnmarshalWorkItem: %v", err)
			}
			want := tc.item
			if c, ok := want.(provider.ContinueAsNewItem); ok && c.CarryForwardEvents == nil {
				c.CarryForwardEvents = []provider.CarryForwardEvent{}
				want = c
			}
			if !reflect.DeepEqual(back, want) {
				t.Fatalf("decode: got %#v, want %#v", back, want)
			}
		})
		kinds[tc.item.Kind()] = true
	}
	// Every variant is covered.
	for _, k := range []string{provider.KindStartOrchestration, provider.KindActivityExecute, provider.KindActivityCompleted,
		provider.KindActivityFailed, provider.KindTimerFired, provider.KindExternalRaised, provider.KindSubOrchCompleted,
		provider.KindSubOrchFailed, provider.KindCancelInstance, provider.KindContinueAsNew, provider.KindQueueMessage} {
		if !kinds[k] {
			t.Errorf("no golden case for work item %s", k)
		}
	}
}

func TestWorkItemDecodeDefaults(t *testing.T) {
	// carry_forward_events, session_id, tag and initial_custom_status may be absent.
	item, err := provider.UnmarshalWorkItem([]byte(`{"ContinueAsNew":{"instance":"i","orchestration":"O","input":"1","version":null}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := provider.ContinueAsNewItem{Instance: "i", Orchestration: "O", Input: "1", CarryForwardEvents: []provider.CarryForwardEvent{}}
	if !reflect.DeepEqual(item, want) {
		t.Fatalf("got %#v, want %#v", item, want)
	}
}

func TestWorkItemDecodeErrors(t *testing.T) {
	cases := map[string]string{
		"unknown variant":  `{"TeleportInstance":{"instance":"i"}}`,
		"feature-gated":    `{"ExternalRaised2":{"instance":"i","name":"n","topic":"t","data":"d"}}`,
		"two variants":     `{"CancelInstance":{"instance":"i","reason":"r"},"QueueMessage":{"instance":"i","name":"n","data":"d"}}`,
		"missing field":    `{"CancelInstance":{"instance":"i"}}`,
		"null field":       `{"CancelInstance":{"instance":"i","reason":null}}`,
		"wrong type":       `{"TimerFired":{"instance":"i","execution_id":"1","id":3,"fire_at_ms":1}}`,
		"negative":         `{"TimerFired":{"instance":"i","execution_id":-1,"id":3,"fire_at_ms":1}}`,
		"unit form":        `"CancelInstance"`,
		"not json":         `NOT_VALID_JSON{{{`,
		"null":             `null`,
		"bad carry tuple":  `{"ContinueAsNew":{"instance":"i","orchestration":"O","input":"1","version":null,"carry_forward_events":[["only-name"]]}}`,
		"unknown details":  `{"ActivityFailed":{"instance":"i","execution_id":1,"id":2,"details":{"Cosmic":{"message":"ray"}}}}`,
		"unknown app kind": `{"ActivityFailed":{"instance":"i","execution_id":1,"id":2,"details":{"Application":{"kind":"Exploded","message":"m","retryable":false}}}}`,
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			item, err := provider.UnmarshalWorkItem([]byte(data))
			if err == nil {
				t.Fatalf("want an error, decoded %#v", item)
			}
			if item != nil {
				t.Fatalf("want a nil item with the error, got %#v", item)
			}
		})
	}
	_, err := provider.UnmarshalWorkItem([]byte(`{"TeleportInstance":{"instance":"i"}}`))
	if !errors.Is(err, provider.ErrUnknownKind) {
		t.Fatalf("unknown variant: want ErrUnknownKind, got %v", err)
	}
}

var eventGolden = []struct {
	name  string
	event provider.Event
	json  string
}{
	{"ContractOrchestrationStarted", ev(1, nil, "order-1", 1, 1760000000000, provider.OrchestrationStarted{Name: "ProcessOrder", Version: "1.0.0", Input: "{}"}),
		`{"event_id":1,"source_event_id":null,"instance_id":"order-1","execution_id":1,"timestamp_ms":1760000000000,"duroxide_version":"0.1.29","type":"OrchestrationStarted","name":"ProcessOrder","version":"1.0.0","input":"{}","parent_instance":null,"parent_id":null}`},
	{"ContractKeyValuesCleared", ev(4, nil, "order-1", 1, 1760000000100, provider.KeyValuesCleared{}),
		`{"event_id":4,"source_event_id":null,"instance_id":"order-1","execution_id":1,"timestamp_ms":1760000000100,"duroxide_version":"0.1.29","type":"KeyValuesCleared"}`},
	{"ContractCustomStatusUpdated", ev(5, nil, "order-1", 1, 1760000000200, provider.CustomStatusUpdated{Status: ptr(`{"pct":50}`)}),
		`{"event_id":5,"source_event_id":null,"instance_id":"order-1","execution_id":1,"timestamp_ms":1760000000200,"duroxide_version":"0.1.29","type":"CustomStatusUpdated","status":"{\"pct\":50}"}`},
	{"OrchestrationStartedFull", ev(1, nil, "c", 2, 7, provider.OrchestrationStarted{Name: "N", Version: "2.0.0", Input: "in", ParentInstance: ptr("p"), ParentID: ptr(uint64(3)), CarryForwardEvents: []provider.CarryForwardEvent{{Name: "q", Data: "d"}}, InitialCustomStatus: ptr("s")}),
		`{"event_id":1,"source_event_id":null,"instance_id":"c","execution_id":2,"timestamp_ms":7,"duroxide_version":"0.1.29","type":"OrchestrationStarted","name":"N","version":"2.0.0","input":"in","parent_instance":"p","parent_id":3,"carry_forward_events":[["q","d"]],"initial_custom_status":"s"}`},
	{"OrchestrationStartedEmptyCarry", ev(1, nil, "c", 1, 7, provider.OrchestrationStarted{Name: "N", Version: "1", Input: "", CarryForwardEvents: []provider.CarryForwardEvent{}}),
		`{"event_id":1,"source_event_id":null,"instance_id":"c","execution_id":1,"timestamp_ms":7,"duroxide_version":"0.1.29","type":"OrchestrationStarted","name":"N","version":"1","input":"","parent_instance":null,"parent_id":null,"carry_forward_events":[]}`},
	{"OrchestrationCompleted", ev(9, nil, "i", 1, 7, provider.OrchestrationCompleted{Output: "out"}),
		`{"event_id":9,"source_event_id":null,"instance_id":"i","execution_id":1,"timestamp_ms":7,"duroxide_version":"0.1.29","type":"OrchestrationCompleted","output":"out"}`},
	{"OrchestrationFailedInfrastructure", ev(99999, nil, "i", 1, 7, provider.OrchestrationFailed{Details: provider.InfrastructureDetails{Operation: "ack_orchestration_item", Message: "lost", Retryable: true}}),
		`{"event_id":99999,"source_event_id":null,"instance_id":"i","execution_id":1,"timestamp_ms":7,"duroxide_version":"0.1.29","type":"OrchestrationFailed","details":{"Infrastructure":{"operation":"ack_orchestration_item","message":"lost","retryable":true}}}`},
	{"OrchestrationFailedCancelled", ev(3, nil, "i", 1, 7, provider.OrchestrationFailed{Details: provider.ApplicationDetails{Kind: provider.AppErrorKind{Code: provider.AppCancelled, Reason: "stop"}, Message: "cancelled"}}),
		`{"event_id":3,"source_event_id":null,"instance_id":"i","execution_id":1,"timestamp_ms":7,"duroxide_version":"0.1.29","type":"OrchestrationFailed","details":{"Application":{"kind":{"Cancelled":{"reason":"stop"}},"message":"cancelled","retryable":false}}}`},
	{"OrchestrationContinuedAsNew", ev(4, nil, "i", 1, 7, provider.OrchestrationContinuedAsNew{Input: "5"}),
		`{"event_id":4,"source_event_id":null,"instance_id":"i","execution_id":1,"timestamp_ms":7,"duroxide_version":"0.1.29","type":"OrchestrationContinuedAsNew","input":"5"}`},
	{"OrchestrationCancelRequested", ev(4, nil, "i", 1, 7, provider.OrchestrationCancelRequested{Reason: "r"}),
		`{"event_id":4,"source_event_id":null,"instance_id":"i","execution_id":1,"timestamp_ms":7,"duroxide_version":"0.1.29","type":"OrchestrationCancelRequested","reason":"r"}`},
	{"OrchestrationChained", ev(4, nil, "i", 1, 7, provider.OrchestrationChained{Name: "N", Instance: "j", Input: "x"}),
		`{"event_id":4,"source_event_id":null,"instance_id":"i","execution_id":1,"timestamp_ms":7,"duroxide_version":"0.1.29","type":"OrchestrationChained","name":"N","instance":"j","input":"x"}`},
	{"ActivityScheduled", ev(2, nil, "i", 1, 7, provider.ActivityScheduled{Name: "A", Input: "x", SessionID: ptr("s"), Tag: ptr("gpu")}),
		`{"event_id":2,"source_event_id":null,"instance_id":"i","execution_id":1,"timestamp_ms":7,"duroxide_version":"0.1.29","type":"ActivityScheduled","name":"A","input":"x","session_id":"s","tag":"gpu"}`},
	{"ActivityScheduledPlain", ev(2, nil, "i", 1, 7, provider.ActivityScheduled{Name: "A", Input: "x"}),
		`{"event_id":2,"source_event_id":null,"instance_id":"i","execution_id":1,"timestamp_ms":7,"duroxide_version":"0.1.29","type":"ActivityScheduled","name":"A","input":"x"}`},
	{"ActivityCompleted", ev(3, ptr(uint64(2)), "i", 1, 7, provider.ActivityCompleted{Result: "r"}),
		`{"event_id":3,"source_event_id":2,"instance_id":"i","execution_id":1,"timestamp_ms":7,"duroxide_version":"0.1.29","type":"ActivityCompleted","result":"r"}`},
	{"ActivityFailedNondeterminism", ev(3, ptr(uint64(2)), "i", 1, 7, provider.ActivityFailed{Details: provider.ConfigurationDetails{Kind: provider.ConfigNondeterminism, Resource: "A"}}),
		`{"event_id":3,"source_event_id":2,"instance_id":"i","execution_id":1,"timestamp_ms":7,"duroxide_version":"0.1.29","type":"ActivityFailed","details":{"Configuration":{"kind":"Nondeterminism","resource":"A","message":null}}}`},
	{"ActivityCancelRequested", ev(5, ptr(uint64(2)), "i", 1, 7, provider.ActivityCancelRequested{Reason: "lost select"}),
		`{"event_id":5,"source_event_id":2,"instance_id":"i","execution_id":1,"timestamp_ms":7,"duroxide_version":"0.1.29","type":"ActivityCancelRequested","reason":"lost select"}`},
	{"TimerCreated", ev(2, nil, "i", 1, 7, provider.TimerCreated{FireAtMs: 1760000005000}),
		`{"event_id":2,"source_event_id":null,"instance_id":"i","execution_id":1,"timestamp_ms":7,"duroxide_version":"0.1.29","type":"TimerCreated","fire_at_ms":1760000005000}`},
	{"TimerFired", ev(3, ptr(uint64(2)), "i", 1, 7, provider.TimerFired{FireAtMs: 1760000005000}),
		`{"event_id":3,"source_event_id":2,"instance_id":"i","execution_id":1,"timestamp_ms":7,"duroxide_version":"0.1.29","type":"TimerFired","fire_at_ms":1760000005000}`},
	{"ExternalSubscribed", ev(2, nil, "i", 1, 7, provider.ExternalSubscribed{Name: "Approval"}),
		`{"event_id":2,"source_event_id":null,"instance_id":"i","execution_id":1,"timestamp_ms":7,"duroxide_version":"0.1.29","type":"ExternalSubscribed","name":"Approval"}`},
	{"ExternalEvent", ev(3, nil, "i", 1, 7, provider.ExternalEvent{Name: "Approval", Data: "yes"}),
		`{"event_id":3,"source_event_id":null,"instance_id":"i","execution_id":1,"timestamp_ms":7,"duroxide_version":"0.1.29","type":"ExternalEvent","name":"Approval","data":"yes"}`},
	{"ExternalSubscribedCancelled", ev(4, ptr(uint64(2)), "i", 1, 7, provider.ExternalSubscribedCancelled{Reason: "r"}),
		`{"event_id":4,"source_event_id":2,"instance_id":"i","execution_id":1,"timestamp_ms":7,"duroxide_version":"0.1.29","type":"ExternalSubscribedCancelled","reason":"r"}`},
	{"SubOrchestrationScheduled", ev(2, nil, "i", 1, 7, provider.SubOrchestrationScheduled{Name: "C", Instance: "i::sub::2", Input: "x"}),
		`{"event_id":2,"source_event_id":null,"instance_id":"i","execution_id":1,"timestamp_ms":7,"duroxide_version":"0.1.29","type":"SubOrchestrationScheduled","name":"C","instance":"i::sub::2","input":"x"}`},
	{"SubOrchestrationCompleted", ev(3, ptr(uint64(2)), "i", 1, 7, provider.SubOrchestrationCompleted{Result: "r"}),
		`{"event_id":3,"source_event_id":2,"instance_id":"i","execution_id":1,"timestamp_ms":7,"duroxide_version":"0.1.29","type":"SubOrchestrationCompleted","result":"r"}`},
	{"SubOrchestrationFailedPoisonActivity", ev(3, ptr(uint64(2)), "i", 1, 7, provider.SubOrchestrationFailed{Details: provider.PoisonDetails{AttemptCount: 2, MaxAttempts: 1, MessageType: provider.PoisonActivity{Instance: "c", ExecutionID: 1, ActivityName: "A", ActivityID: 4}, Message: "m"}}),
		`{"event_id":3,"source_event_id":2,"instance_id":"i","execution_id":1,"timestamp_ms":7,"duroxide_version":"0.1.29","type":"SubOrchestrationFailed","details":{"Poison":{"attempt_count":2,"max_attempts":1,"message_type":{"Activity":{"instance":"c","execution_id":1,"activity_name":"A","activity_id":4}},"message":"m"}}}`},
	{"SubOrchestrationCancelRequested", ev(4, ptr(uint64(2)), "i", 1, 7, provider.SubOrchestrationCancelRequested{Reason: "r"}),
		`{"event_id":4,"source_event_id":2,"instance_id":"i","execution_id":1,"timestamp_ms":7,"duroxide_version":"0.1.29","type":"SubOrchestrationCancelRequested","reason":"r"}`},
	{"QueueSubscribedLegacyTag", ev(2, nil, "i", 1, 7, provider.QueueSubscribed{Name: "inbox"}),
		`{"event_id":2,"source_event_id":null,"instance_id":"i","execution_id":1,"timestamp_ms":7,"duroxide_version":"0.1.29","type":"ExternalSubscribedPersistent","name":"inbox"}`},
	{"QueueEventDeliveredLegacyTag", ev(3, nil, "i", 1, 7, provider.QueueEventDelivered{Name: "inbox", Data: "m"}),
		`{"event_id":3,"source_event_id":null,"instance_id":"i","execution_id":1,"timestamp_ms":7,"duroxide_version":"0.1.29","type":"ExternalEventPersistent","name":"inbox","data":"m"}`},
	{"QueueSubscriptionCancelledLegacyTag", ev(4, ptr(uint64(2)), "i", 1, 7, provider.QueueSubscriptionCancelled{Reason: "r"}),
		`{"event_id":4,"source_event_id":2,"instance_id":"i","execution_id":1,"timestamp_ms":7,"duroxide_version":"0.1.29","type":"ExternalSubscribedPersistentCancelled","reason":"r"}`},
	{"CustomStatusCleared", ev(6, nil, "i", 1, 7, provider.CustomStatusUpdated{}),
		`{"event_id":6,"source_event_id":null,"instance_id":"i","execution_id":1,"timestamp_ms":7,"duroxide_version":"0.1.29","type":"CustomStatusUpdated","status":null}`},
	{"KeyValueSet", ev(7, nil, "i", 1, 7, provider.KeyValueSet{Key: "k", Value: "v", LastUpdatedAtMs: 8}),
		`{"event_id":7,"source_event_id":null,"instance_id":"i","execution_id":1,"timestamp_ms":7,"duroxide_version":"0.1.29","type":"KeyValueSet","key":"k","value":"v","last_updated_at_ms":8}`},
	{"KeyValueCleared", ev(8, nil, "i", 1, 7, provider.KeyValueCleared{Key: "k"}),
		`{"event_id":8,"source_event_id":null,"instance_id":"i","execution_id":1,"timestamp_ms":7,"duroxide_version":"0.1.29","type":"KeyValueCleared","key":"k"}`},
	{"OrchestrationFailedPoisonDeserialization", ev(99999, nil, "i", 1, 7, provider.OrchestrationFailed{Details: provider.PoisonDetails{AttemptCount: 11, MaxAttempts: 10, MessageType: provider.PoisonFailedDeserialization{Instance: "i", ExecutionID: 1, Error: "unknown variant"}, Message: "m"}}),
		`{"event_id":99999,"source_event_id":null,"instance_id":"i","execution_id":1,"timestamp_ms":7,"duroxide_version":"0.1.29","type":"OrchestrationFailed","details":{"Poison":{"attempt_count":11,"max_attempts":10,"message_type":{"FailedDeserialization":{"instance":"i","execution_id":1,"error":"unknown variant"}},"message":"m"}}}`},
	{"OrchestrationFailedPanicked", ev(3, nil, "i", 1, 7, provider.OrchestrationFailed{Details: provider.ApplicationDetails{Kind: provider.AppErrorKind{Code: provider.AppPanicked}, Message: "oops", Retryable: false}}),
		`{"event_id":3,"source_event_id":null,"instance_id":"i","execution_id":1,"timestamp_ms":7,"duroxide_version":"0.1.29","type":"OrchestrationFailed","details":{"Application":{"kind":"Panicked","message":"oops","retryable":false}}}`},
}

func ev(id uint64, source *uint64, instance string, execution, ts uint64, kind provider.EventKind) provider.Event {
	return provider.Event{EventID: id, SourceEventID: source, InstanceID: instance, ExecutionID: execution, TimestampMs: ts, DuroxideVersion: "0.1.29", Kind: kind}
}

// allEventTypes is every event kind of the contract (§2.2), by wire tag.
var allEventTypes = []string{
	"OrchestrationStarted", "OrchestrationCompleted", "OrchestrationFailed", "OrchestrationContinuedAsNew",
	"OrchestrationCancelRequested", "OrchestrationChained", "ActivityScheduled", "ActivityCompleted",
	"ActivityFailed", "ActivityCancelRequested", "TimerCreated", "TimerFired", "ExternalSubscribed",
	"ExternalEvent", "ExternalSubscribedCancelled", "SubOrchestrationScheduled", "SubOrchestrationCompleted",
	"SubOrchestrationFailed", "SubOrchestrationCancelRequested", "ExternalSubscribedPersistent",
	"ExternalEventPersistent", "ExternalSubscribedPersistentCancelled", "CustomStatusUpdated",
	"KeyValueSet", "KeyValueCleared", "KeyValuesCleared",
}

func TestEventGolden(t *testing.T) {
	types := map[string]bool{}
	for _, tc := range eventGolden {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(tc.event)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			if string(got) != tc.json {
				t.Fatalf("encode:\n got %s\nwant %s", got, tc.json)
			}
			var back provider.Event
			if err := json.Unmarshal([]byte(tc.json), &back); err != nil {
				t.Fatalf("Unmarshal: %v", err)
			}
			if !reflect.DeepEqual(back, tc.event) {
				t.Fatalf("decode: got %#v, want %#v", back, tc.event)
			}
		})
		types[tc.event.Kind.EventType()] = true
	}
	for _, typ := range allEventTypes {
		if !types[typ] {
			t.Errorf("no golden case for event type %s", typ)
		}
	}
}

func TestEventDecodeDefaults(t *testing.T) {
	// last_updated_at_ms defaults to 0 for old events; source_event_id may be absent.
	var e provider.Event
	err := json.Unmarshal([]byte(`{"event_id":7,"instance_id":"i","execution_id":1,"timestamp_ms":7,"duroxide_version":"0.1.20","type":"KeyValueSet","key":"k","value":"v"}`), &e)
	if err != nil {
		t.Fatal(err)
	}
	if e.SourceEventID != nil || e.Kind != (provider.KeyValueSet{Key: "k", Value: "v"}) {
		t.Fatalf("got %#v", e)
	}
}

func TestEventDecodeErrors(t *testing.T) {
	cases := map[string]string{
		"unknown type":         `{"event_id":1,"source_event_id":null,"instance_id":"i","execution_id":1,"timestamp_ms":7,"duroxide_version":"9.0.0","type":"QuantumLeap","where":"1955"}`,
		"missing type":         `{"event_id":1,"source_event_id":null,"instance_id":"i","execution_id":1,"timestamp_ms":7,"duroxide_version":"0.1.29"}`,
		"legacy external form": `{"ActivityCompleted":{"event_id":3,"source_event_id":2,"result":"r"}}`,
		"missing kind field":   `{"event_id":3,"source_event_id":2,"instance_id":"i","execution_id":1,"timestamp_ms":7,"duroxide_version":"0.1.29","type":"ActivityCompleted"}`,
		"missing header field": `{"event_id":3,"source_event_id":2,"instance_id":"i","timestamp_ms":7,"duroxide_version":"0.1.29","type":"ActivityCompleted","result":"r"}`,
		"garbage":              `{"garbage": true}`,
		"invalid json":         `NOT_VALID_JSON{{{`,
		"null":                 `null`,
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			var e provider.Event
			if err := json.Unmarshal([]byte(data), &e); err == nil {
				t.Fatalf("want an error, decoded %#v", e)
			}
		})
	}
	var e provider.Event
	err := json.Unmarshal([]byte(`{"event_id":1,"source_event_id":null,"instance_id":"i","execution_id":1,"timestamp_ms":7,"duroxide_version":"9.0.0","type":"QuantumLeap"}`), &e)
	if !errors.Is(err, provider.ErrUnknownKind) {
		t.Fatalf("unknown type: want ErrUnknownKind, got %v", err)
	}
}

func TestEncodeRejectsIncompleteValues(t *testing.T) {
	if _, err := json.Marshal(provider.Event{EventID: 1}); err == nil {
		t.Error("event with nil kind encoded")
	}
	if _, err := json.Marshal(provider.Event{EventID: 1, Kind: provider.ActivityFailed{}}); err == nil {
		t.Error("ActivityFailed event with nil details encoded")
	}
	if _, err := provider.MarshalWorkItem(provider.SubOrchFailedItem{ParentInstance: "p"}); err == nil {
		t.Error("SubOrchFailed with nil details encoded")
	}
	if _, err := provider.MarshalWorkItem(nil); !errors.Is(err, provider.ErrInvalidInput) {
		t.Errorf("nil work item: want ErrInvalidInput, got %v", err)
	}
}

func TestErrorDetailsDisplayMessage(t *testing.T) {
	cases := []struct {
		d    provider.ErrorDetails
		want string
	}{
		{provider.InfrastructureDetails{Operation: "read", Message: "gone"}, "infrastructure:read: gone"},
		{provider.ConfigurationDetails{Kind: provider.ConfigNondeterminism, Resource: "O", Message: ptr("diverged")}, "nondeterministic: diverged"},
		{provider.ConfigurationDetails{Kind: provider.ConfigNondeterminism, Resource: "O"}, "nondeterministic in O"},
		{provider.ApplicationDetails{Kind: provider.AppErrorKind{Code: provider.AppCancelled, Reason: "user"}}, "canceled: user"},
		{provider.ApplicationDetails{Kind: provider.AppErrorKind{Code: provider.AppPanicked}, Message: "oops"}, "orchestration panicked: oops"},
		{provider.ApplicationDetails{Kind: provider.AppErrorKind{Code: provider.AppActivityFailed}, Message: "boom"}, "boom"},
		{provider.PoisonDetails{AttemptCount: 11, MaxAttempts: 10, MessageType: provider.PoisonOrchestration{Instance: "i"}}, "poison: orchestration i exceeded 11 attempts (max 10)"},
		{provider.PoisonDetails{AttemptCount: 11, MaxAttempts: 10, MessageType: provider.PoisonOrchestration{Instance: "i"}, Cause: "orchestration \"X\" is not registered on any worker that fetched it"},
			"poison: orchestration i exceeded 11 attempts (max 10): orchestration \"X\" is not registered on any worker that fetched it"},
		{provider.PoisonDetails{AttemptCount: 11, MaxAttempts: 10, MessageType: provider.PoisonActivity{ActivityName: "A", ActivityID: 2}}, "poison: activity A#2 exceeded 11 attempts (max 10)"},
	}
	for _, c := range cases {
		if got := c.d.DisplayMessage(); got != c.want {
			t.Errorf("%#v: got %q, want %q", c.d, got, c.want)
		}
	}
}

// TestEventDecodeAgreesWithEncodingJSON checks the event decoder, which
// takes fields from one parse of the object, against encoding/json's
// decoding of the same object into a plain struct: escapes, surrogate
// pairs, invalid UTF-8 and numbers that are not uint64s.
func TestEventDecodeAgreesWithEncodingJSON(t *testing.T) {
	type plain struct {
		EventID         uint64  `json:"event_id"`
		SourceEventID   *uint64 `json:"source_event_id"`
		InstanceID      string  `json:"instance_id"`
		ExecutionID     uint64  `json:"execution_id"`
		TimestampMs     uint64  `json:"timestamp_ms"`
		DuroxideVersion string  `json:"duroxide_version"`
		Name            string  `json:"name"`
		Input           string  `json:"input"`
		SessionID       *string `json:"session_id"`
	}
	strs := []string{
		`"plain"`, `""`, `"\"quoted\" \\ \/ \b\f\n\r\t"`, `"\u00e9\u4e2d\ud83d\ude00"`, `"\ud83d alone"`,
		"\"caf\xc3\xa9\"", "\"bad \xff byte\"", "\"\xed\xa0\x80 surrogate bytes\"", `7`, `true`, `{"a":1}`,
	}
	nums := []string{`0`, `18446744073709551615`, `18446744073709551616`, `-1`, `1.5`, `1e3`, `-0`, `"7"`, `null`}
	var cases []string
	for _, s := range strs {
		cases = append(cases,
			`{"event_id":2,"instance_id":`+s+`,"execution_id":1,"timestamp_ms":7,"duroxide_version":"0.1.29","type":"ActivityScheduled","name":"n","input":"i"}`,
			`{"event_id":2,"instance_id":"i","execution_id":1,"timestamp_ms":7,"duroxide_version":"0.1.29","type":"ActivityScheduled","name":"n","input":`+s+`,"session_id":`+s+`}`)
	}
	for _, n := range nums {
		cases = append(cases,
			`{"event_id":`+n+`,"instance_id":"i","execution_id":1,"timestamp_ms":7,"duroxide_version":"0.1.29","type":"ActivityScheduled","name":"n","input":"i"}`,
			`{"event_id":2,"source_event_id":`+n+`,"instance_id":"i","execution_id":1,"timestamp_ms":7,"duroxide_version":"0.1.29","type":"ActivityScheduled","name":"n","input":"i"}`)
	}
	for _, data := range cases {
		var want plain
		wantErr := json.Unmarshal([]byte(data), &want)
		if wantErr == nil && (strings.Contains(data, `"event_id":null`)) {
			wantErr = errors.New("null required field")
		}
		got, err := provider.DecodeStoredEvent(provider.OpRead, "i", 1, 0, []byte(data))
		if (err != nil) != (wantErr != nil) {
			t.Errorf("%s:\n decoder error %v, encoding/json error %v", data, err, wantErr)
			continue
		}
		if err != nil {
			if !errors.Is(err, provider.ErrCorruptData) {
				t.Errorf("%s: error %v does not wrap ErrCorruptData", data, err)
			}
			continue
		}
		k := got.Kind.(provider.ActivityScheduled)
		back := plain{got.EventID, got.SourceEventID, got.InstanceID, got.ExecutionID, got.TimestampMs, got.DuroxideVersion, k.Name, k.Input, k.SessionID}
		if !reflect.DeepEqual(back, want) {
			t.Errorf("%s:\n decoded %#v\n   want %#v", data, back, want)
		}
	}
}

// BenchmarkDecodeStoredEvent decodes the two events of an activity as a
// history stores them (every history read decodes each of its events).
func BenchmarkDecodeStoredEvent(b *testing.B) {
	scheduled := uint64(2)
	events := []provider.Event{
		{EventID: scheduled, InstanceID: "order-1", ExecutionID: 1, TimestampMs: 1790000000000, DuroxideVersion: "0.1.29",
			Kind: provider.ActivityScheduled{Name: "Hello", Input: `"Tokyo"`}},
		{EventID: scheduled + 1, SourceEventID: &scheduled, InstanceID: "order-1", ExecutionID: 1, TimestampMs: 1790000000000, DuroxideVersion: "0.1.29",
			Kind: provider.ActivityCompleted{Result: `"Hello, Tokyo!"`}},
	}
	var stored [][]byte
	for _, e := range events {
		data, err := json.Marshal(e)
		if err != nil {
			b.Fatal(err)
		}
		stored = append(stored, data)
	}
	for b.Loop() {
		for i, data := range stored {
			if _, err := provider.DecodeStoredEvent(provider.OpRead, "order-1", 1, i, data); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(stored)), "ns/event")
}

// TestParentExecutionIDWire checks the parent_execution_id field of a
// child's start and of its OrchestrationStarted event: it follows
// duroxide's fields when set, is left out when 0 (so duroxide's goldens
// above still encode byte for byte), and decodes to 0 when absent or null,
// as duroxide writes it.
func TestParentExecutionIDWire(t *testing.T) {
	start := provider.StartOrchestrationItem{Instance: "p::sub::2", Orchestration: "Child", Input: "x", ParentInstance: ptr("p"), ParentID: ptr(uint64(2)), ExecutionID: 1, ParentExecutionID: 3}
	startJSON := `{"StartOrchestration":{"instance":"p::sub::2","orchestration":"Child","input":"x","version":null,"parent_instance":"p","parent_id":2,"execution_id":1,"parent_execution_id":3}}`
	got, err := provider.MarshalWorkItem(start)
	if err != nil || string(got) != startJSON {
		t.Fatalf("encode start: got %s, %v\nwant %s", got, err, startJSON)
	}
	back, err := provider.UnmarshalWorkItem([]byte(startJSON))
	if err != nil || !reflect.DeepEqual(back, start) {
		t.Fatalf("decode start: got %#v, %v; want %#v", back, err, start)
	}

	started := ev(1, nil, "p::sub::2", 1, 7, provider.OrchestrationStarted{Name: "Child", Version: "1.0.0", Input: "x", ParentInstance: ptr("p"), ParentID: ptr(uint64(2)), ParentExecutionID: 3})
	startedJSON := `{"event_id":1,"source_event_id":null,"instance_id":"p::sub::2","execution_id":1,"timestamp_ms":7,"duroxide_version":"0.1.29","type":"OrchestrationStarted","name":"Child","version":"1.0.0","input":"x","parent_instance":"p","parent_id":2,"parent_execution_id":3}`
	got, err = json.Marshal(started)
	if err != nil || string(got) != startedJSON {
		t.Fatalf("encode started: got %s, %v\nwant %s", got, err, startedJSON)
	}
	var backEv provider.Event
	if err := json.Unmarshal([]byte(startedJSON), &backEv); err != nil || !reflect.DeepEqual(backEv, started) {
		t.Fatalf("decode started: got %#v, %v; want %#v", backEv, err, started)
	}

	// As duroxide writes a child's start and event: no field, or null.
	for _, data := range []string{
		`{"StartOrchestration":{"instance":"p::sub::2","orchestration":"Child","input":"x","version":null,"parent_instance":"p","parent_id":2,"execution_id":1}}`,
		`{"StartOrchestration":{"instance":"p::sub::2","orchestration":"Child","input":"x","version":null,"parent_instance":"p","parent_id":2,"execution_id":1,"parent_execution_id":null}}`,
	} {
		item, err := provider.UnmarshalWorkItem([]byte(data))
		if err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		if s := item.(provider.StartOrchestrationItem); s.ParentExecutionID != 0 || *s.ParentID != 2 {
			t.Errorf("%s: decoded %#v, want ParentExecutionID 0", data, s)
		}
	}
	for _, data := range []string{
		`{"event_id":1,"source_event_id":null,"instance_id":"c","execution_id":1,"timestamp_ms":7,"duroxide_version":"0.1.29","type":"OrchestrationStarted","name":"N","version":"1","input":"","parent_instance":"p","parent_id":2}`,
		`{"event_id":1,"source_event_id":null,"instance_id":"c","execution_id":1,"timestamp_ms":7,"duroxide_version":"0.1.29","type":"OrchestrationStarted","name":"N","version":"1","input":"","parent_instance":"p","parent_id":2,"parent_execution_id":null}`,
	} {
		var e provider.Event
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		if s := e.Kind.(provider.OrchestrationStarted); s.ParentExecutionID != 0 || *s.ParentID != 2 {
			t.Errorf("%s: decoded %#v, want ParentExecutionID 0", data, s)
		}
	}

	// A value of the wrong type is an error, not a silent 0.
	if item, err := provider.UnmarshalWorkItem([]byte(`{"StartOrchestration":{"instance":"c","orchestration":"C","input":"","version":null,"parent_instance":null,"parent_id":null,"execution_id":1,"parent_execution_id":"3"}}`)); err == nil {
		t.Errorf("string parent_execution_id decoded as %#v", item)
	}
}
