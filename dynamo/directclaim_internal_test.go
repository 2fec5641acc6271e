package dynamo

import (
	"testing"
	"time"

	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/queues"
)

func claimEvent(id uint64, source uint64, kind provider.EventKind) provider.Event {
	e := provider.Event{EventID: id, InstanceID: "i", ExecutionID: 1, Kind: kind}
	if source != 0 {
		e.SourceEventID = &source
	}
	return e
}

// TestOutstandingActivities: scheduled activities stay outstanding until a
// completion, failure or cancellation refers to them.
func TestOutstandingActivities(t *testing.T) {
	history := []provider.Event{
		claimEvent(1, 0, provider.OrchestrationStarted{Name: "o"}),
		claimEvent(2, 0, provider.ActivityScheduled{Name: "a"}),
		claimEvent(3, 0, provider.ActivityScheduled{Name: "b"}),
		claimEvent(4, 0, provider.ActivityScheduled{Name: "c"}),
		claimEvent(5, 0, provider.ActivityScheduled{Name: "d"}),
		claimEvent(6, 2, provider.ActivityCompleted{Result: "x"}),
		claimEvent(7, 3, provider.ActivityFailed{}),
		claimEvent(8, 4, provider.ActivityCancelRequested{Reason: "r"}),
		claimEvent(9, 0, provider.TimerCreated{FireAtMs: 1}),
	}
	got := outstandingActivities(history)
	if len(got) != 1 || !got[5] {
		t.Fatalf("outstanding %v, want only activity 5", got)
	}
}

// TestTurnAddressesOnlyAnActivityNoOlderOneCanPrecede: a turn's signal
// carries a claim for its first untagged, session-less activity only when
// the fetched history and the commit leave no earlier activity of the
// instance outstanding.
func TestTurnAddressesOnlyAnActivityNoOlderOneCanPrecede(t *testing.T) {
	p := newProvider(Options{Shards: 4, Now: time.Now}, nil)
	act := func(id uint64, session, tag *string) provider.ActivityExecuteItem {
		return provider.ActivityExecuteItem{Instance: "i", ExecutionID: 1, ID: id, Name: "a", SessionID: session, Tag: tag}
	}
	sched := func(id uint64) provider.Event { return claimEvent(id, 0, provider.ActivityScheduled{Name: "a"}) }
	s := "s"
	for name, c := range map[string]struct {
		outstanding map[uint64]bool
		exec        uint64
		commit      provider.TurnCommit
		want        []bool // per signal: carries a claim
	}{
		"first turn": {map[uint64]bool{}, 1, provider.TurnCommit{ExecutionID: 1,
			HistoryDelta: []provider.Event{sched(2)}, WorkerItems: []provider.ActivityExecuteItem{act(2, nil, nil)}}, []bool{true}},
		"chain step": {map[uint64]bool{2: true}, 1, provider.TurnCommit{ExecutionID: 1,
			HistoryDelta: []provider.Event{claimEvent(3, 2, provider.ActivityCompleted{}), sched(4)}, WorkerItems: []provider.ActivityExecuteItem{act(4, nil, nil)}}, []bool{true}},
		"earlier activity outstanding": {map[uint64]bool{2: true}, 1, provider.TurnCommit{ExecutionID: 1,
			HistoryDelta: []provider.Event{sched(4)}, WorkerItems: []provider.ActivityExecuteItem{act(4, nil, nil)}}, []bool{false}},
		"earlier activity cancelled by the turn": {map[uint64]bool{2: true}, 1, provider.TurnCommit{ExecutionID: 1,
			HistoryDelta: []provider.Event{claimEvent(3, 2, provider.ActivityCancelRequested{}), sched(4)}, WorkerItems: []provider.ActivityExecuteItem{act(4, nil, nil)},
			CancelledActivities: []provider.ScheduledActivityIdentifier{{Instance: "i", ExecutionID: 1, ActivityID: 2}}}, []bool{true}},
		"history not decoded": {nil, 0, provider.TurnCommit{ExecutionID: 1,
			HistoryDelta: []provider.Event{sched(2)}, WorkerItems: []provider.ActivityExecuteItem{act(2, nil, nil)}}, []bool{false}},
		"continue-as-new": {map[uint64]bool{}, 1, provider.TurnCommit{ExecutionID: 2,
			HistoryDelta: []provider.Event{sched(2)}, WorkerItems: []provider.ActivityExecuteItem{act(2, nil, nil)}}, []bool{false}},
		"session activity": {map[uint64]bool{}, 1, provider.TurnCommit{ExecutionID: 1,
			HistoryDelta: []provider.Event{sched(2)}, WorkerItems: []provider.ActivityExecuteItem{act(2, &s, nil)}}, []bool{false}},
		"tagged activity": {map[uint64]bool{}, 1, provider.TurnCommit{ExecutionID: 1,
			HistoryDelta: []provider.Event{sched(2)}, WorkerItems: []provider.ActivityExecuteItem{act(2, nil, &s)}}, []bool{false}},
		"fan-out: the first only": {map[uint64]bool{}, 1, provider.TurnCommit{ExecutionID: 1,
			HistoryDelta: []provider.Event{sched(2), sched(3)}, WorkerItems: []provider.ActivityExecuteItem{act(2, nil, nil), act(3, nil, nil)}}, []bool{true, false}},
	} {
		t.Run(name, func(t *testing.T) {
			turn := &turnState{token: "tok", st: &instanceState{id: "i"}, outstanding: c.outstanding, outstandingExec: c.exec}
			plan, _, err := p.planTurn(turn, c.commit, 1000)
			if err != nil {
				t.Fatal(err)
			}
			var got []bool
			for _, sig := range plan.signals {
				if sig.Kind == queues.Worker {
					got = append(got, sig.Claim != "")
					if sig.Claim != "" {
						if at, ok := readyAt(sig.Claim); !ok || at != 1000 {
							t.Errorf("claim %q is not the row's ready key", sig.Claim)
						}
					}
				}
			}
			if len(got) != len(c.want) {
				t.Fatalf("worker signals %v, want %d", plan.signals, len(c.want))
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("signal %d (%+v): claim %v, want %v", i, plan.signals[i], got[i], c.want[i])
				}
			}
		})
	}
}
