package runtimetest

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/provider"
)

// The instance stats tests ([durable.Client.Stats], duroxide's
// Client::get_orchestration_stats): the seven of management_interface_test.rs,
// run in Management, and sample_orchestration_stats of e2e_samples.rs, run
// in Samples. Stats need no management capability, so these run on every
// provider. Besides duroxide's assertions, each checks the stats against
// the instance's current history as the client reads it: as many events,
// and as many bytes as their JSON encodings hold.

// managementStatsTests port management_interface_test.rs's stats tests, in
// duroxide's order.
var managementStatsTests = []Test{
	{"client_get_orchestration_stats_after_completion", statsAfterCompletion},
	{"client_get_orchestration_stats_nonexistent", statsNonexistent},
	{"client_orchestration_stats_kv_metrics_accuracy", statsKVMetricsAccuracy},
	{"client_orchestration_stats_large_history_size", statsLargeHistorySize},
	{"client_orchestration_stats_large_kv_values", statsLargeKVValues},
	{"client_orchestration_stats_no_carry_forward", statsNoCarryForward},
	{"client_orchestration_stats_after_continue_as_new", statsAfterContinueAsNew},
}

// statsOf returns id's stats, failing the test on an error or when there
// are none.
func statsOf(h *H, id string) provider.SystemStats {
	h.Helper()
	stats, err := h.Client.Stats(h.Ctx(), id)
	if err != nil {
		h.Fatalf("Stats(%s): %v", id, err)
	}
	if stats == nil {
		h.Fatalf("Stats(%s) = nil; want the stats of an existing instance", id)
	}
	return *stats
}

// statsCheckHistory fails the test unless stats describe id's current
// history, whose event types must be want: as many events, and their
// encodings' summed length.
func statsCheckHistory(h *H, id string, stats provider.SystemStats, want ...string) {
	h.Helper()
	hist := h.History(id)
	if got := EventTypes(hist); !slices.Equal(got, want) {
		h.Fatalf("%s: current history %v; want %v", id, got, want)
	}
	size := 0
	for _, ev := range hist {
		b, err := json.Marshal(ev)
		if err != nil {
			h.Fatalf("%s: encode event %d: %v", id, ev.EventID, err)
		}
		size += len(b)
	}
	if stats.HistoryEventCount != uint64(len(hist)) || stats.HistorySizeBytes != uint64(size) {
		h.Errorf("%s: stats count %d events of %d bytes; the current history has %d events of %d bytes",
			id, stats.HistoryEventCount, stats.HistorySizeBytes, len(hist), size)
	}
}

// statsCheckKV fails the test unless stats count keys KV keys holding bytes
// value bytes.
func statsCheckKV(h *H, id string, stats provider.SystemStats, keys, bytes uint64) {
	h.Helper()
	if stats.KVUserKeyCount != keys || stats.KVTotalValueBytes != bytes {
		h.Errorf("%s: stats count %d KV keys of %d value bytes; want %d keys of %d bytes",
			id, stats.KVUserKeyCount, stats.KVTotalValueBytes, keys, bytes)
	}
}

// statsCheckNoCarryForward fails the test unless stats report no
// carry-forward messages.
func statsCheckNoCarryForward(h *H, id string, stats provider.SystemStats) {
	h.Helper()
	if stats.QueuePendingCount != 0 {
		h.Errorf("%s: queue pending count %d; want 0 (no carry-forward)", id, stats.QueuePendingCount)
	}
}

// statsRun serves orch (registered as name) and acts, starts id of name
// with input, and fails the test unless it completes with want.
func statsRun(h *H, id, name, input, want string, orch func(*durable.OrchestrationContext, string) (string, error), acts ...durable.Definition) {
	h.Helper()
	h.Serve(append(acts, durable.OrchestrationFunc(name, orch))...)
	h.Start(name, id, durable.Raw(input))
	if out := h.Completed(id); out != want {
		h.Fatalf("%s: output %q; want %q", id, out, want)
	}
}

// statsAfterCompletion: one KV key set, stats present once the instance
// completes.
func statsAfterCompletion(h *H) {
	const id = "inst-stats-1"
	statsRun(h, id, "StatsOrch", "", "done", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.KV().Set("user_key", "user_value")
		return "done", nil
	})
	stats := statsOf(h, id)
	if stats.HistoryEventCount == 0 {
		h.Errorf("stats count no history events")
	}
	statsCheckHistory(h, id, stats, "OrchestrationStarted", "KeyValueSet", "OrchestrationCompleted")
	statsCheckKV(h, id, stats, 1, uint64(len("user_value")))
	statsCheckNoCarryForward(h, id, stats)
}

// statsNonexistent: no stats, and no error, for an unknown instance.
func statsNonexistent(h *H) {
	stats, err := h.Client.Stats(h.Ctx(), "no-such-instance")
	if err != nil || stats != nil {
		h.Fatalf("Stats(no-such-instance) = %+v, %v; want nil, nil", stats, err)
	}
}

// statsKVMetricsAccuracy: three keys, their value bytes summed exactly.
func statsKVMetricsAccuracy(h *H) {
	const id = "inst-multi-kv"
	statsRun(h, id, "MultiKV", "", "done", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.KV().Set("k1", "aaa")   // 3 bytes
		ctx.KV().Set("k2", "bbbbb") // 5 bytes
		ctx.KV().Set("k3", "cc")    // 2 bytes
		return "done", nil
	})
	stats := statsOf(h, id)
	statsCheckKV(h, id, stats, 3, 10)
	statsCheckHistory(h, id, stats, "OrchestrationStarted", "KeyValueSet", "KeyValueSet", "KeyValueSet", "OrchestrationCompleted")
}

// statsLargeHistorySize: four activities returning 64, 128, 192 and
// 256 KiB make a history over 256 KiB and under 1 MiB, counted exactly.
func statsLargeHistorySize(h *H) {
	const id = "big-hist"
	const kib = 1024
	bigResult := durable.ActivityFunc("BigResult", func(_ context.Context, in string) (string, error) {
		n, _ := strconv.Atoi(in)
		return strings.Repeat("X", 64*kib*n), nil
	})
	statsRun(h, id, "BigHistory", "", "done", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		for i := 1; i <= 4; i++ {
			if _, err := smpAct(ctx, "BigResult", strconv.Itoa(i)).Get(ctx); err != nil {
				return "", err
			}
		}
		return "done", nil
	}, bigResult)
	stats := statsOf(h, id)
	// Four activities, scheduled and completed, between the start and the
	// completion.
	if stats.HistoryEventCount != 10 {
		h.Errorf("history event count %d; want 10", stats.HistoryEventCount)
	}
	// The results alone are 640 KiB; with the events' encodings the
	// history stays under 1 MiB.
	if stats.HistorySizeBytes <= 640*kib || stats.HistorySizeBytes >= 1024*kib {
		h.Errorf("history size %d bytes; want over 640 KiB (the results) and under 1 MiB", stats.HistorySizeBytes)
	}
	var want []string
	for range 4 {
		want = append(want, "ActivityScheduled", "ActivityCompleted")
	}
	statsCheckHistory(h, id, stats, slices.Concat([]string{"OrchestrationStarted"}, want, []string{"OrchestrationCompleted"})...)
	statsCheckKV(h, id, stats, 0, 0)
}

// statsLargeKVValues: four keys of 16 KiB each count 65,536 value bytes
// exactly.
func statsLargeKVValues(h *H) {
	const id = "big-kv"
	statsRun(h, id, "BigKV", "", "done", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		for i := range 4 {
			ctx.KV().Set("big_"+strconv.Itoa(i), strings.Repeat("Y", 16*1024))
		}
		return "done", nil
	})
	stats := statsOf(h, id)
	statsCheckKV(h, id, stats, 4, 4*16*1024)
	statsCheckHistory(h, id, stats, "OrchestrationStarted", "KeyValueSet", "KeyValueSet", "KeyValueSet", "KeyValueSet", "OrchestrationCompleted")
}

// statsNoCarryForward: a fresh orchestration's execution starts with no
// carried-forward messages.
func statsNoCarryForward(h *H) {
	const id = "no-cf"
	statsRun(h, id, "Simple", "", "done", func(*durable.OrchestrationContext, string) (string, error) {
		return "done", nil
	})
	stats := statsOf(h, id)
	statsCheckNoCarryForward(h, id, stats)
	statsCheckHistory(h, id, stats, "OrchestrationStarted", "OrchestrationCompleted")
	statsCheckKV(h, id, stats, 0, 0)
}

// statsAfterContinueAsNew: after two continue-as-new, stats describe the
// final execution only, while the KV store, scoped to the instance, keeps
// the key every execution set.
func statsAfterContinueAsNew(h *H) {
	const id = "can-stats"
	noop := durable.ActivityFunc("Noop", func(context.Context, string) (string, error) { return "ok", nil })
	statsRun(h, id, "CANStats", "0", "done:2", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		n, _ := strconv.Atoi(in)
		ctx.KV().Set("iter", strconv.Itoa(n))
		if n < 2 {
			// The activity makes a turn boundary before continuing.
			if _, err := smpAct(ctx, "Noop", "").Get(ctx); err != nil {
				return "", err
			}
			return "", ctx.ContinueAsNew(durable.Raw(strconv.Itoa(n + 1)))
		}
		return "done:" + strconv.Itoa(n), nil
	}, noop)
	stats := statsOf(h, id)
	// duroxide's bounds: at least the start and the completion, and not
	// the three executions' histories together.
	if stats.HistoryEventCount < 2 || stats.HistoryEventCount > 5 {
		h.Errorf("history event count %d; want the final execution's alone (2 to 5 events)", stats.HistoryEventCount)
	}
	if hist := h.History(id); len(hist) == 0 || hist[0].ExecutionID != 3 {
		h.Fatalf("current history %v; want the third execution's", EventTypes(hist))
	}
	statsCheckHistory(h, id, stats, "OrchestrationStarted", "KeyValueSet", "OrchestrationCompleted")
	statsCheckKV(h, id, stats, 1, 1) // iter = "2"
	statsCheckNoCarryForward(h, id, stats)
}

// sampleOrchestrationStats (e2e_samples.rs): after an instance completes,
// Client.Stats reports its history size, its KV usage and no carry-forward
// messages; an unknown instance has no stats.
func sampleOrchestrationStats(h *H) {
	const id = "pipeline-1"
	fetch := durable.ActivityFunc("FetchData", func(_ context.Context, url string) (string, error) {
		return "data from " + url, nil
	})
	pipeline := durable.OrchestrationFunc("DataPipeline", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		result, err := smpAct(ctx, "FetchData", "https://api.example.com").Get(ctx)
		if err != nil {
			return "", err
		}
		ctx.KV().Set("last_fetch", result)
		ctx.KV().Set("status", "complete")
		return result, nil
	})
	h.Serve(fetch, pipeline)
	if stats, err := h.Client.Stats(h.Ctx(), "missing"); err != nil || stats != nil {
		h.Fatalf("Stats(missing) = %+v, %v; want nil, nil", stats, err)
	}
	const result = "data from https://api.example.com"
	h.Start("DataPipeline", id, durable.Raw(""))
	if out := h.Completed(id); out != result {
		h.Fatalf("output %q; want %q", out, result)
	}
	stats := statsOf(h, id)
	// Started, ActivityScheduled, ActivityCompleted and Completed at least.
	if stats.HistoryEventCount < 4 || stats.HistorySizeBytes == 0 {
		h.Errorf("stats count %d events of %d bytes; want at least 4 events, non-empty", stats.HistoryEventCount, stats.HistorySizeBytes)
	}
	statsCheckHistory(h, id, stats, "OrchestrationStarted", "ActivityScheduled", "ActivityCompleted",
		"KeyValueSet", "KeyValueSet", "OrchestrationCompleted")
	statsCheckKV(h, id, stats, 2, uint64(len(result)+len("complete")))
	statsCheckNoCarryForward(h, id, stats)
}
