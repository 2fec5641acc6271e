package provider_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/duradyn/duradyn/provider"
)

func TestOperationNamesAreDistinctSnakeCase(t *testing.T) {
	ops := []string{
		provider.OpFetchOrchestrationItem, provider.OpAckOrchestrationItem, provider.OpAbandonOrchestrationItem,
		provider.OpRenewOrchestrationItemLock, provider.OpRead, provider.OpReadWithExecution,
		provider.OpAppendWithExecution, provider.OpEnqueueForWorker, provider.OpFetchWorkItem,
		provider.OpAckWorkItem, provider.OpRenewWorkItemLock, provider.OpAbandonWorkItem,
		provider.OpRenewSessionLock, provider.OpCleanupOrphanedSessions, provider.OpEnqueueForOrchestrator,
		provider.OpCustomStatus, provider.OpKVValue, provider.OpKVValues, provider.OpInstanceStats,
		provider.OpListInstances, provider.OpListInstancesByStatus, provider.OpListExecutions,
		provider.OpReadHistoryWithExecutionID, provider.OpReadHistory, provider.OpLatestExecutionID,
		provider.OpInstanceInfo, provider.OpExecutionInfo, provider.OpSystemMetrics, provider.OpQueueDepths,
		provider.OpListChildren, provider.OpParentID, provider.OpDeleteInstancesAtomic,
		provider.OpDeleteInstanceBulk, provider.OpPruneExecutions, provider.OpPruneExecutionsBulk,
		provider.OpDeleteInstance,
	}
	snake := regexp.MustCompile(`^[a-z]+(_[a-z]+)*$`)
	seen := map[string]bool{}
	for _, op := range ops {
		if !snake.MatchString(op) {
			t.Errorf("operation name %q is not snake_case", op)
		}
		if seen[op] {
			t.Errorf("operation name %q is used twice", op)
		}
		seen[op] = true
	}
}

func TestCorruptWrapsSentinelAndCause(t *testing.T) {
	cause := errors.New("bad json")
	err := provider.Corrupt(provider.OpRead, cause, "event %d: %v", 3, cause)
	if !errors.Is(err, provider.ErrCorruptData) || !errors.Is(err, cause) {
		t.Fatalf("want ErrCorruptData and the cause in the chain, got %v", err.Err)
	}
	if err.Retryable || provider.IsRetryable(err) {
		t.Error("corrupt data must be permanent")
	}
	if err.Op != provider.OpRead || err.Message != "event 3: bad json" {
		t.Errorf("got op %q message %q", err.Op, err.Message)
	}
	if nilCause := provider.Corrupt(provider.OpRead, nil, "x"); !errors.Is(nilCause, provider.ErrCorruptData) {
		t.Errorf("nil cause: want ErrCorruptData, got %v", nilCause.Err)
	}
}

func TestSharedErrorConstructors(t *testing.T) {
	cases := []struct {
		err     *provider.Error
		kind    error
		message string
	}{
		{provider.InstanceNotFound(provider.OpInstanceInfo, "i1"), provider.ErrNotFound, "Instance i1 not found"},
		{provider.ExecutionNotFound(provider.OpExecutionInfo, "i1", 7), provider.ErrNotFound, "Execution 7 not found for instance i1"},
		{provider.StillRunning(provider.OpDeleteInstancesAtomic, "i1"), provider.ErrStillRunning,
			"Instance i1 is still running. Use force=true to delete anyway, or cancel first."},
		{provider.TreeChanged(provider.OpDeleteInstancesAtomic, "p", "c"), provider.ErrTreeChanged,
			"Cannot delete: instance p has child c that was created after tree traversal. Re-fetch the tree and retry."},
	}
	for _, c := range cases {
		if !errors.Is(c.err, c.kind) || c.err.Retryable {
			t.Errorf("%v: want permanent %v", c.err, c.kind)
		}
		if c.err.Message != c.message {
			t.Errorf("message %q, want %q", c.err.Message, c.message)
		}
	}
}

func TestStartFromMessages(t *testing.T) {
	v2 := "2.0.0"
	cases := []struct {
		name              string
		msgs              []provider.WorkItem
		wantName, wantVer string
		wantOK            bool
	}{
		{"none", nil, "", "", false},
		{"no start", []provider.WorkItem{provider.ExternalRaisedItem{Instance: "i", Name: "e"}}, "", "", false},
		{"start with version", []provider.WorkItem{
			provider.ExternalRaisedItem{Instance: "i", Name: "e"},
			provider.StartOrchestrationItem{Instance: "i", Orchestration: "Order", Version: &v2},
		}, "Order", "2.0.0", true},
		{"start without version", []provider.WorkItem{provider.StartOrchestrationItem{Instance: "i", Orchestration: "Order"}},
			"Order", provider.UnknownVersion, true},
		{"continue-as-new", []provider.WorkItem{provider.ContinueAsNewItem{Instance: "i", Orchestration: "Loop", Version: &v2}},
			"Loop", "2.0.0", true},
		{"first one wins", []provider.WorkItem{
			provider.ContinueAsNewItem{Instance: "i", Orchestration: "Loop"},
			provider.StartOrchestrationItem{Instance: "i", Orchestration: "Order", Version: &v2},
		}, "Loop", provider.UnknownVersion, true},
	}
	for _, c := range cases {
		name, version, ok := provider.StartFromMessages(c.msgs)
		if name != c.wantName || version != c.wantVer || ok != c.wantOK {
			t.Errorf("%s: got (%q, %q, %v), want (%q, %q, %v)", c.name, name, version, ok, c.wantName, c.wantVer, c.wantOK)
		}
	}
}

func TestStartedIn(t *testing.T) {
	timer := ev(2, nil, "i", 1, 0, provider.TimerCreated{FireAtMs: 5})
	started := ev(1, nil, "i", 1, 0, provider.OrchestrationStarted{Name: "Order", Version: "1.0.0"})
	if _, _, ok := provider.StartedIn([]provider.Event{timer}); ok {
		t.Error("history without OrchestrationStarted: want ok false")
	}
	if _, _, ok := provider.StartedIn(nil); ok {
		t.Error("empty history: want ok false")
	}
	name, version, ok := provider.StartedIn([]provider.Event{timer, started})
	if !ok || name != "Order" || version != "1.0.0" {
		t.Errorf("got (%q, %q, %v), want (Order, 1.0.0, true)", name, version, ok)
	}
}

func TestOnlyQueueMessages(t *testing.T) {
	q := provider.QueueMessageItem{Instance: "i", Name: "inbox", Data: "x"}
	if !provider.OnlyQueueMessages([]provider.WorkItem{q, q}) {
		t.Error("QueueMessage-only batch: want true")
	}
	if provider.OnlyQueueMessages([]provider.WorkItem{q, provider.ExternalRaisedItem{Instance: "i", Name: "e"}}) {
		t.Error("batch with an external event: want false")
	}
	if provider.OnlyQueueMessages([]provider.WorkItem{q, nil}) {
		t.Error("batch with a nil item: want false")
	}
}

func TestExecutionsToPrune(t *testing.T) {
	at := func(ms int64) *int64 { return &ms }
	done := func(id uint64, ms int64) provider.ExecutionSummary {
		return provider.ExecutionSummary{ID: id, Status: provider.StatusContinuedAsNew, CompletedAtMs: at(ms)}
	}
	// Executions 1-5, 5 current; out of order as a map would give them.
	execs := []provider.ExecutionSummary{
		done(3, 3000), done(1, 1000), {ID: 5, Status: provider.StatusRunning}, done(2, 2000), done(4, 4000),
	}
	cases := []struct {
		name    string
		execs   []provider.ExecutionSummary
		current uint64
		options provider.PruneOptions
		want    []uint64
	}{
		{"all but the current", execs, 5, provider.PruneOptions{}, []uint64{1, 2, 3, 4}},
		{"keep last 1 is the current", execs, 5, provider.PruneOptions{KeepLast: 1}, []uint64{1, 2, 3, 4}},
		{"keep last 3", execs, 5, provider.PruneOptions{KeepLast: 3}, []uint64{1, 2}},
		{"keep more than there are", execs, 5, provider.PruneOptions{KeepLast: 10}, nil},
		{"completed before", execs, 5, provider.PruneOptions{CompletedBefore: time.UnixMilli(2500)}, []uint64{1, 2}},
		{"completed before is strict", execs, 5, provider.PruneOptions{CompletedBefore: time.UnixMilli(2000)}, []uint64{1}},
		{"both criteria", execs, 5, provider.PruneOptions{KeepLast: 4, CompletedBefore: time.UnixMilli(10_000)}, []uint64{1}},
		{"never a running one", []provider.ExecutionSummary{
			{ID: 1, Status: provider.StatusRunning}, done(2, 2000), {ID: 3, Status: provider.StatusRunning},
		}, 3, provider.PruneOptions{}, []uint64{2}},
		{"never the current, even when terminal", []provider.ExecutionSummary{done(1, 1000), done(2, 2000)}, 2,
			provider.PruneOptions{}, []uint64{1}},
		{"no completion time with CompletedBefore", []provider.ExecutionSummary{{ID: 1, Status: provider.StatusFailed}, done(2, 2000)}, 2,
			provider.PruneOptions{CompletedBefore: time.UnixMilli(10_000)}, nil},
		{"none", nil, 1, provider.PruneOptions{}, nil},
	}
	for _, c := range cases {
		in := slices.Clone(c.execs)
		got := provider.ExecutionsToPrune(c.execs, c.current, c.options)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
		if !slices.Equal(in, c.execs) {
			t.Errorf("%s: execs was modified", c.name)
		}
	}
}

func TestDecodeStoredEvent(t *testing.T) {
	want := ev(4, ptr[uint64](3), "i", 2, 9, provider.TimerFired{FireAtMs: 9})
	data, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := provider.DecodeStoredEvent(provider.OpRead, "i", 2, 0, data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	_, err = provider.DecodeStoredEvent(provider.OpRead, "i", 2, 5, []byte(`{"event_id":`))
	var pe *provider.Error
	if !errors.Is(err, provider.ErrCorruptData) || !errors.As(err, &pe) || pe.Op != provider.OpRead || pe.Retryable {
		t.Fatalf("want a permanent ErrCorruptData error of read, got %v", err)
	}
}

func TestSystemStatsCounting(t *testing.T) {
	started := ev(1, nil, "i", 1, 0, provider.OrchestrationStarted{
		Name: "Loop", Version: "1.0.0",
		CarryForwardEvents: []provider.CarryForwardEvent{{Name: "q", Data: "a"}, {Name: "q", Data: "b"}},
	})
	startedData, err := json.Marshal(started)
	if err != nil {
		t.Fatal(err)
	}
	var s provider.SystemStats
	if err := s.CountEvent(provider.OpInstanceStats, "i", 1, startedData); err != nil {
		t.Fatal(err)
	}
	// An event that is not the OrchestrationStarted is counted, not decoded.
	if err := s.CountEvent(provider.OpInstanceStats, "i", 2, []byte("not json")); err != nil {
		t.Fatal(err)
	}
	s.CountKV(map[string]provider.KVEntry{"a": {Value: "xyz"}, "b": {Value: ""}})
	want := provider.SystemStats{
		HistoryEventCount: 2, HistorySizeBytes: uint64(len(startedData) + len("not json")),
		QueuePendingCount: 2, KVUserKeyCount: 2, KVTotalValueBytes: 3,
	}
	if s != want {
		t.Errorf("got %+v, want %+v", s, want)
	}
	err = new(provider.SystemStats).CountEvent(provider.OpInstanceStats, "i", provider.InitialEventID, []byte("{"))
	if !errors.Is(err, provider.ErrCorruptData) {
		t.Errorf("undecodable OrchestrationStarted: want ErrCorruptData, got %v", err)
	}
}

func TestSystemMetricsCountInstance(t *testing.T) {
	var m provider.SystemMetrics
	for _, status := range []string{provider.StatusRunning, provider.StatusRunning, provider.StatusCompleted,
		provider.StatusFailed, provider.StatusContinuedAsNew, ""} {
		m.CountInstance(status)
	}
	want := provider.SystemMetrics{TotalInstances: 6, RunningInstances: 2, CompletedInstances: 1, FailedInstances: 1}
	if m != want {
		t.Errorf("got %+v, want %+v", m, want)
	}
}

func TestInstanceFilterSelects(t *testing.T) {
	at := func(ms int64) *int64 { return &ms }
	cases := []struct {
		name        string
		filter      provider.InstanceFilter
		id          string
		completedAt *int64
		want        bool
	}{
		{"no criteria, running", provider.InstanceFilter{}, "a", nil, true},
		{"no criteria, completed", provider.InstanceFilter{}, "a", at(5), true},
		{"listed", provider.InstanceFilter{InstanceIDs: []string{"b", "a"}}, "a", nil, true},
		{"not listed", provider.InstanceFilter{InstanceIDs: []string{"b"}}, "a", nil, false},
		{"empty list selects nothing", provider.InstanceFilter{InstanceIDs: []string{}}, "a", at(5), false},
		{"completed before", provider.InstanceFilter{CompletedBefore: time.UnixMilli(10)}, "a", at(9), true},
		{"completed before is strict", provider.InstanceFilter{CompletedBefore: time.UnixMilli(10)}, "a", at(10), false},
		{"running is not completed before", provider.InstanceFilter{CompletedBefore: time.UnixMilli(10)}, "a", nil, false},
		{"both", provider.InstanceFilter{InstanceIDs: []string{"a"}, CompletedBefore: time.UnixMilli(10)}, "a", at(3), true},
	}
	for _, c := range cases {
		if got := c.filter.Selects(c.id, c.completedAt); got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

func TestLatestExecution(t *testing.T) {
	if got := provider.LatestExecution(slices.Values([]uint64(nil))); got != provider.InitialExecutionID {
		t.Errorf("no executions: got %d, want %d", got, provider.InitialExecutionID)
	}
	if got := provider.LatestExecution(slices.Values([]uint64{3, 7, 2})); got != 7 {
		t.Errorf("got %d, want 7", got)
	}
}

func TestTurnVisibleAt(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_123)
	details := provider.ApplicationDetails{Kind: provider.AppErrorKind{Code: provider.AppOrchestrationFailed}, Message: "x"}
	timers := []struct {
		name     string
		fireAtMs uint64
	}{
		{"future", 1_700_000_060_000},
		{"past", 1_600_000_000_000},
		{"at now", 1_700_000_000_123},
		{"zero", 0},
	}
	for _, tc := range timers {
		item := provider.TimerFiredItem{Instance: "i", ExecutionID: 1, ID: 2, FireAtMs: tc.fireAtMs}
		got := provider.TurnVisibleAt(item, now)
		if want := time.UnixMilli(int64(tc.fireAtMs)); !got.Equal(want) {
			t.Errorf("TimerFired fire_at_ms %d (%s): visible at %v, want %v (its fire time, whatever now is)", tc.fireAtMs, tc.name, got, want)
		}
	}
	others := []provider.WorkItem{
		provider.StartOrchestrationItem{Instance: "i", Orchestration: "O", Input: "{}", ExecutionID: 1},
		provider.ActivityCompletedItem{Instance: "i", ExecutionID: 1, ID: 2, Result: "r"},
		provider.ActivityFailedItem{Instance: "i", ExecutionID: 1, ID: 2, Details: details},
		provider.ExternalRaisedItem{Instance: "i", Name: "e", Data: "d"},
		provider.SubOrchCompletedItem{ParentInstance: "p", ParentExecutionID: 1, ParentID: 3, Result: "r"},
		provider.SubOrchFailedItem{ParentInstance: "p", ParentExecutionID: 1, ParentID: 3, Details: details},
		provider.CancelInstanceItem{Instance: "i", Reason: "r"},
		provider.ContinueAsNewItem{Instance: "i", Orchestration: "O", Input: "{}"},
		provider.QueueMessageItem{Instance: "i", Name: "q", Data: "d"},
	}
	for _, item := range others {
		if got := provider.TurnVisibleAt(item, now); !got.Equal(now) {
			t.Errorf("%s: visible at %v, want now (%v)", item.Kind(), got, now)
		}
	}
}

// TestValidateInstanceID: an empty id and one that is not valid UTF-8 are
// invalid input, for the id alone and inside queued work: a store of
// strings would turn different invalid byte strings into one instance.
func TestValidateInstanceID(t *testing.T) {
	for _, id := range []string{"", "bad-\xff", "\xc3\x28"} {
		if err := provider.ValidateInstanceID("start", id); !errors.Is(err, provider.ErrInvalidInput) {
			t.Errorf("ValidateInstanceID(%q) = %v; want ErrInvalidInput", id, err)
		}
		start := provider.StartOrchestrationItem{Instance: id, Orchestration: "O", ExecutionID: 1}
		if err := provider.ValidateOrchestratorItem("enqueue", start); !errors.Is(err, provider.ErrInvalidInput) {
			t.Errorf("ValidateOrchestratorItem of instance %q = %v; want ErrInvalidInput", id, err)
		}
		act := provider.ActivityExecuteItem{Instance: id, ExecutionID: 1, ID: 2, Name: "A"}
		if err := provider.ValidateWorkerItem("enqueue", act); !errors.Is(err, provider.ErrInvalidInput) {
			t.Errorf("ValidateWorkerItem of instance %q = %v; want ErrInvalidInput", id, err)
		}
	}
	for _, id := range []string{"order-1", "größe/Ω", "sub::1"} {
		if err := provider.ValidateInstanceID("start", id); err != nil {
			t.Errorf("ValidateInstanceID(%q) = %v; want nil", id, err)
		}
	}
}
