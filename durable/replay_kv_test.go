package durable

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/duradyn/duradyn/durable/internal/replay"
	"github.com/duradyn/duradyn/provider"
)

// ---- kv.rs ----
//
// No kv.rs replay test reaches a KV limit; duradyn's limits are 0.1.29's
// (256 KiB custom status, 256 B tag, 64 KiB value, 150 keys).

func rxGetOr(ctx *OrchestrationContext, key, def string) string {
	if v, ok := ctx.KV().Get(key); ok {
		return v
	}
	return def
}

func rxKVSet(key, value string) rxOrch {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		ctx.KV().Set(key, value)
		return "done", nil
	}
}

func rxKVSetThenGet(key, value string) rxOrch {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		ctx.KV().Set(key, value)
		return rxGetOr(ctx, key, ""), nil
	}
}

func rxKVSetThenActivity(key, value, act, actIn string) rxOrch {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		ctx.KV().Set(key, value)
		r, err := CallActivity[Raw](ctx, act, Raw(actIn)).Get(ctx)
		return string(r), err
	}
}

// rxAllKVOps is AllKvOpsHandler.
func rxAllKVOps(ctx *OrchestrationContext, _ string) (string, error) {
	ctx.KV().Set("X", "Y")
	ctx.KV().Delete("Z")
	ctx.KV().Clear()
	ctx.KV().Set("A", "1")
	return rxGetOr(ctx, "A", ""), nil
}

// rxKVReadModifyWrite increments counter and returns the new value.
func rxKVReadModifyWrite(ctx *OrchestrationContext, def string) (int, error) {
	n, err := strconv.Atoi(rxGetOr(ctx, "counter", def))
	if err != nil {
		return 0, err
	}
	ctx.KV().Set("counter", strconv.Itoa(n+1))
	return n + 1, nil
}

func rxSnapshot(kv ...any) map[string]provider.KVEntry {
	out := map[string]provider.KVEntry{}
	for i := 0; i < len(kv); i += 3 {
		out[kv[i].(string)] = provider.KVEntry{Value: kv[i+1].(string), LastUpdatedAtMs: uint64(kv[i+2].(int))}
	}
	return out
}

// rxKVEvents checks the KV events of the delta: "set k=v", "clear k",
// "clear_all", each without a source id; new sets carry the turn's time.
func rxKVEvents(want ...string) rxCheck {
	return func(t *testing.T, turn *replay.Turn) {
		t.Helper()
		var got []string
		for _, ev := range turn.Commit.HistoryDelta {
			var s string
			switch k := ev.Kind.(type) {
			case provider.KeyValueSet:
				s = fmt.Sprintf("set %s=%s", k.Key, k.Value)
				if k.LastUpdatedAtMs != uint64(testTurnTime.UnixMilli()) {
					t.Errorf("%s: last_updated_at_ms %d, want the turn's time", s, k.LastUpdatedAtMs)
				}
			case provider.KeyValueCleared:
				s = "clear " + k.Key
			case provider.KeyValuesCleared:
				s = "clear_all"
			default:
				continue
			}
			if ev.SourceEventID != nil {
				t.Errorf("%s has source_event_id %d", s, *ev.SourceEventID)
			}
			got = append(got, s)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("KV events %q, want %q", got, want)
		}
	}
}

var rxKVCases = []rxCase{
	// 2.1 Action/event conversion.
	{
		name:    "action_to_event_kv_variants",
		history: rxStarted,
		orch:    rxAllKVOps,
		check: rxAll(rxCompleted("1"), rxKVEvents("set X=Y", "clear Z", "clear_all", "set A=1"),
			rxDelta("KeyValueSet 2", "KeyValueCleared 3", "KeyValuesCleared 4", "KeyValueSet 5", "OrchestrationCompleted 6")),
	},

	// 2.2 Replay determinism. Code that returns without suspending ends the
	// run before the history's KV events are applied; like duroxide's
	// engine, duradyn then records its KV actions again, so these rows
	// assert the result only, as duroxide's do.
	{
		name: "replay_set_value_reconstructs_state",
		history: rxStarted + `
{"event_id":2,"type":"KeyValueSet","key":"A","value":"1","last_updated_at_ms":0}`,
		orch:  rxKVSetThenGet("A", "1"),
		check: rxCompleted("1"),
	},
	{
		name: "replay_multiple_sets_last_wins",
		history: rxStarted + `
{"event_id":2,"type":"KeyValueSet","key":"A","value":"1","last_updated_at_ms":0}
{"event_id":3,"type":"KeyValueSet","key":"A","value":"2","last_updated_at_ms":0}`,
		orch: func(ctx *OrchestrationContext, _ string) (string, error) {
			ctx.KV().Set("A", "1")
			ctx.KV().Set("A", "2")
			return rxGetOr(ctx, "A", ""), nil
		},
		check: rxCompleted("2"),
	},
	{
		name: "replay_clear_then_set",
		history: rxStarted + `
{"event_id":2,"type":"KeyValueSet","key":"A","value":"1","last_updated_at_ms":0}
{"event_id":3,"type":"KeyValuesCleared"}
{"event_id":4,"type":"KeyValueSet","key":"B","value":"2","last_updated_at_ms":0}`,
		orch: func(ctx *OrchestrationContext, _ string) (string, error) {
			ctx.KV().Set("A", "1")
			ctx.KV().Clear()
			ctx.KV().Set("B", "2")
			return "A=" + rxGetOr(ctx, "A", "none") + ",B=" + rxGetOr(ctx, "B", "none"), nil
		},
		check: rxCompleted("A=none,B=2"),
	},
	{
		name: "replay_clear_single_key",
		history: rxStarted + `
{"event_id":2,"type":"KeyValueSet","key":"A","value":"1","last_updated_at_ms":0}
{"event_id":3,"type":"KeyValueSet","key":"B","value":"2","last_updated_at_ms":0}
{"event_id":4,"type":"KeyValueCleared","key":"A"}`,
		orch: func(ctx *OrchestrationContext, _ string) (string, error) {
			ctx.KV().Set("A", "1")
			ctx.KV().Set("B", "2")
			ctx.KV().Delete("A")
			return "A=" + rxGetOr(ctx, "A", "none") + ",B=" + rxGetOr(ctx, "B", "none"), nil
		},
		check: rxCompleted("A=none,B=2"),
	},
	{
		name: "replay_set_value_matches_action",
		history: rxStarted + `
{"event_id":2,"type":"KeyValueSet","key":"A","value":"1","last_updated_at_ms":0}`,
		orch:  rxKVSet("A", "1"),
		check: rxCompleted("done"),
	},
	{
		// History has a KV set where the code schedules an activity.
		name: "replay_set_value_mismatch_nondeterminism",
		history: rxStarted + `
{"event_id":2,"type":"KeyValueSet","key":"A","value":"1","last_updated_at_ms":0}
{"event_id":3,"type":"ActivityScheduled","name":"Task","input":"input"}
{"event_id":4,"source_event_id":3,"type":"ActivityCompleted","result":"result"}`,
		orch:  rxActivity("Task", "input"),
		check: rxNondeterminism("kv set mismatch: action=CallActivity"),
	},
	{
		name: "replay_clear_all_values_matches_action",
		history: rxStarted + `
{"event_id":2,"type":"KeyValuesCleared"}`,
		orch: func(ctx *OrchestrationContext, _ string) (string, error) {
			ctx.KV().Clear()
			return "cleared", nil
		},
		check: rxCompleted("cleared"),
	},
	{
		name: "replay_clear_value_matches_action",
		history: rxStarted + `
{"event_id":2,"type":"KeyValueCleared","key":"A"}`,
		orch: func(ctx *OrchestrationContext, _ string) (string, error) {
			ctx.KV().Delete("A")
			return "cleared", nil
		},
		check: rxCompleted("cleared"),
	},
	{
		name: "replay_clear_value_mismatch_nondeterminism",
		history: rxStarted + `
{"event_id":2,"type":"KeyValueCleared","key":"A"}
{"event_id":3,"type":"ActivityScheduled","name":"Task","input":"input"}
{"event_id":4,"source_event_id":3,"type":"ActivityCompleted","result":"result"}`,
		orch:  rxActivity("Task", "input"),
		check: rxNondeterminism("kv clear mismatch: action=CallActivity"),
	},
	{
		name: "replay_kv_interleaved_with_activities",
		history: rxStarted + `
{"event_id":2,"type":"KeyValueSet","key":"progress","value":"started","last_updated_at_ms":0}
{"event_id":3,"type":"ActivityScheduled","name":"DoWork","input":"work-input"}
{"event_id":4,"source_event_id":3,"type":"ActivityCompleted","result":"work-result"}`,
		orch:  rxKVSetThenActivity("progress", "started", "DoWork", "work-input"),
		check: rxAll(rxCompleted("work-result"), rxDelta("OrchestrationCompleted 5")),
	},
	{
		// A KV set is not awaited: the code runs straight to its end.
		name: "replay_kv_no_token_binding",
		history: rxStarted + `
{"event_id":2,"type":"KeyValueSet","key":"k","value":"v","last_updated_at_ms":0}`,
		orch:  rxKVSet("k", "v"),
		check: rxAll(rxCompleted("done"), rxNoWork()),
	},

	// 2.3 New events and snapshot seeding.
	{
		name:    "new_kv_events_after_replay",
		history: rxStarted,
		orch:    rxAllKVOps,
		check:   rxAll(rxCompleted("1"), rxKVEvents("set X=Y", "clear Z", "clear_all", "set A=1")),
	},
	{
		name:    "kv_state_seeded_from_snapshot",
		history: rxStarted,
		kv:      rxSnapshot("X", "from_prev_exec", 100),
		orch: func(ctx *OrchestrationContext, _ string) (string, error) {
			return rxGetOr(ctx, "X", "missing"), nil
		},
		check: rxAll(rxCompleted("from_prev_exec"), rxKVEvents()),
	},
	{
		name:    "kv_state_snapshot_overridden_by_code",
		history: rxStarted,
		kv:      rxSnapshot("X", "old", 100),
		orch:    rxKVSetThenGet("X", "new"),
		check:   rxAll(rxCompleted("new"), rxKVEvents("set X=new")),
	},

	// 2.4 Reads in the same turn, across turns and across executions.
	{
		name:    "kv_get_value_same_turn",
		history: rxStarted,
		orch:    rxKVSetThenGet("mykey", "myval"),
		check:   rxAll(rxCompleted("myval"), rxKVEvents("set mykey=myval")),
	},
	{
		name: "kv_get_value_previous_turn",
		history: rxStarted + `
{"event_id":2,"type":"KeyValueSet","key":"progress","value":"step_1","last_updated_at_ms":100}
{"event_id":3,"type":"ActivityScheduled","name":"Work","input":"input"}
{"event_id":4,"source_event_id":3,"type":"ActivityCompleted","result":"result"}`,
		orch: func(ctx *OrchestrationContext, _ string) (string, error) {
			ctx.KV().Set("progress", "step_1")
			if _, err := CallActivity[Raw](ctx, "Work", Raw("input")).Get(ctx); err != nil {
				return "", err
			}
			return rxGetOr(ctx, "progress", "missing"), nil
		},
		check: rxAll(rxCompleted("step_1"), rxKVEvents()),
	},
	{
		name:    "kv_get_value_previous_execution",
		history: rxStarted,
		kv:      rxSnapshot("status", "from_exec_1", 500, "config", "old_config", 400),
		orch: func(ctx *OrchestrationContext, _ string) (string, error) {
			return "status=" + rxGetOr(ctx, "status", "missing") + ",config=" + rxGetOr(ctx, "config", "missing") +
				",absent=" + rxGetOr(ctx, "nonexistent", "missing"), nil
		},
		check: rxCompleted("status=from_exec_1,config=old_config,absent=missing"),
	},

	// 2.5 Key/value mismatches. The code suspends on the activity so the
	// KV event is checked against its action.
	{
		name: "kv_set_key_mismatch_nondeterminism",
		history: rxStarted + `
{"event_id":2,"type":"KeyValueSet","key":"B","value":"1","last_updated_at_ms":0}
{"event_id":3,"type":"ActivityScheduled","name":"Task","input":"input"}
{"event_id":4,"source_event_id":3,"type":"ActivityCompleted","result":"result"}`,
		orch:  rxKVSetThenActivity("A", "1", "Task", "input"),
		check: rxNondeterminism("kv set mismatch: action=SetKeyValue", `key: "A"`, `key: "B"`),
	},
	{
		name: "kv_set_value_mismatch_nondeterminism",
		history: rxStarted + `
{"event_id":2,"type":"KeyValueSet","key":"A","value":"old","last_updated_at_ms":0}
{"event_id":3,"type":"ActivityScheduled","name":"Task","input":"input"}
{"event_id":4,"source_event_id":3,"type":"ActivityCompleted","result":"result"}`,
		orch:  rxKVSetThenActivity("A", "new", "Task", "input"),
		check: rxNondeterminism("kv set mismatch: action=SetKeyValue", `value: "new"`, `value: "old"`),
	},
	{
		name: "kv_clear_key_mismatch_nondeterminism",
		history: rxStarted + `
{"event_id":2,"type":"KeyValueCleared","key":"B"}
{"event_id":3,"type":"ActivityScheduled","name":"Task","input":"input"}
{"event_id":4,"source_event_id":3,"type":"ActivityCompleted","result":"result"}`,
		orch: func(ctx *OrchestrationContext, _ string) (string, error) {
			ctx.KV().Delete("A")
			r, err := CallActivity[Raw](ctx, "Task", Raw("input")).Get(ctx)
			return string(r), err
		},
		check: rxNondeterminism("kv clear mismatch: action=ClearKeyValue", `key: "A"`, `key: "B"`),
	},
	{
		// Timestamps are not compared.
		name: "kv_set_timestamp_mismatch_ok",
		history: rxStarted + `
{"event_id":2,"type":"KeyValueSet","key":"A","value":"1","last_updated_at_ms":999}`,
		orch:  rxKVSet("A", "1"),
		check: rxCompleted("done"),
	},
	{
		// Turn 3 of: set counter=1, activity; read, activity; read, +1, set.
		name: "kv_read_modify_write_across_turns_replay",
		history: rxStarted + `
{"event_id":2,"type":"KeyValueSet","key":"counter","value":"1","last_updated_at_ms":100}
{"event_id":3,"type":"ActivityScheduled","name":"Noop","input":""}
{"event_id":4,"source_event_id":3,"type":"ActivityCompleted","result":"ok"}
{"event_id":5,"type":"ActivityScheduled","name":"Noop","input":""}
{"event_id":6,"source_event_id":5,"type":"ActivityCompleted","result":"ok"}`,
		kv: rxSnapshot("counter", "1", 100),
		orch: func(ctx *OrchestrationContext, _ string) (string, error) {
			ctx.KV().Set("counter", "1")
			if _, err := CallActivity[Raw](ctx, "Noop", Raw("")).Get(ctx); err != nil {
				return "", err
			}
			if v := rxGetOr(ctx, "counter", "missing"); v != "1" {
				return "", fmt.Errorf("counter %q after the first turn", v)
			}
			if _, err := CallActivity[Raw](ctx, "Noop", Raw("")).Get(ctx); err != nil {
				return "", err
			}
			n, err := rxKVReadModifyWrite(ctx, "missing")
			return strconv.Itoa(n), err
		},
		check: rxAll(rxCompleted("2"), rxKVEvents("set counter=2"), rxDelta("KeyValueSet 7", "OrchestrationCompleted 8")),
	},
	{
		// The snapshot holds only earlier executions' values; the engine
		// rebuilds this execution's from history (0→1→2→3, then 4 is new).
		name: "kv_read_modify_write_every_turn_snapshot_poisons_replay",
		history: rxStarted + `
{"event_id":2,"type":"KeyValueSet","key":"counter","value":"1","last_updated_at_ms":100}
{"event_id":3,"type":"ActivityScheduled","name":"Noop","input":""}
{"event_id":4,"source_event_id":3,"type":"ActivityCompleted","result":"ok"}
{"event_id":5,"type":"KeyValueSet","key":"counter","value":"2","last_updated_at_ms":200}
{"event_id":6,"type":"ActivityScheduled","name":"Noop","input":""}
{"event_id":7,"source_event_id":6,"type":"ActivityCompleted","result":"ok"}
{"event_id":8,"type":"KeyValueSet","key":"counter","value":"3","last_updated_at_ms":300}
{"event_id":9,"type":"ActivityScheduled","name":"Noop","input":""}
{"event_id":10,"source_event_id":9,"type":"ActivityCompleted","result":"ok"}`,
		orch: func(ctx *OrchestrationContext, _ string) (string, error) {
			for range 4 {
				if _, err := rxKVReadModifyWrite(ctx, "0"); err != nil {
					return "", err
				}
				if _, err := CallActivity[Raw](ctx, "Noop", Raw("")).Get(ctx); err != nil {
					return "", err
				}
			}
			return rxGetOr(ctx, "counter", "0"), nil
		},
		check: rxAll(rxContinue(), rxKVEvents("set counter=4"), rxDelta("KeyValueSet 11", "ActivityScheduled 12"),
			func(t *testing.T, turn *replay.Turn) {
				if w := turn.Commit.WorkerItems; len(w) != 1 || w[0].ID != 12 || w[0].Name != "Noop" {
					t.Fatalf("worker items %+v", w)
				}
			}),
	},
	{
		// The snapshot (from before continue-as-new) seeds the state.
		name: "kv_read_modify_write_with_can_snapshot",
		history: rxStarted + `
{"event_id":2,"type":"KeyValueSet","key":"counter","value":"6","last_updated_at_ms":100}
{"event_id":3,"type":"ActivityScheduled","name":"Noop","input":""}
{"event_id":4,"source_event_id":3,"type":"ActivityCompleted","result":"ok"}`,
		kv: rxSnapshot("counter", "5", 50),
		orch: func(ctx *OrchestrationContext, _ string) (string, error) {
			if _, err := rxKVReadModifyWrite(ctx, "0"); err != nil {
				return "", err
			}
			if _, err := CallActivity[Raw](ctx, "Noop", Raw("")).Get(ctx); err != nil {
				return "", err
			}
			n, err := rxKVReadModifyWrite(ctx, "0")
			return strconv.Itoa(n), err
		},
		check: rxAll(rxCompleted("7"), rxKVEvents("set counter=7")),
	},
	{
		// duroxide's fixture gives the clear event the started event's id 1.
		name: "kv_clear_all_then_set_replay",
		history: rxStarted + `
{"event_id":1,"type":"KeyValuesCleared"}
{"event_id":2,"type":"KeyValueSet","key":"x","value":"new","last_updated_at_ms":100}
{"event_id":3,"type":"ActivityScheduled","name":"Noop","input":""}
{"event_id":4,"source_event_id":3,"type":"ActivityCompleted","result":"ok"}`,
		kv: rxSnapshot("old", "stale", 10),
		orch: func(ctx *OrchestrationContext, _ string) (string, error) {
			ctx.KV().Clear()
			ctx.KV().Set("x", "new")
			if _, err := CallActivity[Raw](ctx, "Noop", Raw("")).Get(ctx); err != nil {
				return "", err
			}
			return "x=" + rxGetOr(ctx, "x", "missing") + ",old=" + rxGetOr(ctx, "old", "gone"), nil
		},
		check: rxCompleted("x=new,old=gone"),
	},
	{
		name: "kv_clear_single_snapshot_key_then_rmw",
		history: rxStarted + `
{"event_id":2,"type":"KeyValueCleared","key":"session"}
{"event_id":3,"type":"KeyValueSet","key":"counter","value":"4","last_updated_at_ms":100}
{"event_id":4,"type":"ActivityScheduled","name":"Noop","input":""}
{"event_id":5,"source_event_id":4,"type":"ActivityCompleted","result":"ok"}`,
		kv: rxSnapshot("session", "abc", 10, "counter", "3", 20),
		orch: func(ctx *OrchestrationContext, _ string) (string, error) {
			ctx.KV().Delete("session")
			if _, err := rxKVReadModifyWrite(ctx, "0"); err != nil {
				return "", err
			}
			if _, err := CallActivity[Raw](ctx, "Noop", Raw("")).Get(ctx); err != nil {
				return "", err
			}
			return "session=" + rxGetOr(ctx, "session", "gone") + ",counter=" + rxGetOr(ctx, "counter", "missing"), nil
		},
		check: rxAll(rxCompleted("session=gone,counter=4"), rxKVEvents()),
	},
}

func TestReplayKV(t *testing.T) { rxRun(t, rxKVCases) }
