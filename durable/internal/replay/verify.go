package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"

	"github.com/duradyn/duradyn/provider"
)

// Divergence is the first difference between two computations of one
// turn from the same input: the turn as run (by held code, say) and the
// same turn replayed from history.
type Divergence struct {
	// Position is the index of the first call the two runs made
	// differently among the execution's calls, from 0; -1 when they made
	// the same calls and differ otherwise (output, failure, ...).
	Position int
	// Ran and Replayed describe what each run did there: a call ("" for
	// none), or with Position -1 the first event or outcome that differs.
	Ran, Replayed string
	// RanSite and ReplayedSite are where each run made its call, when
	// known.
	RanSite, ReplayedSite *Site
}

// String describes the divergence, naming the calls' source lines.
func (d *Divergence) String() string {
	if d.Position < 0 {
		return fmt.Sprintf("the calls agree but the turn differs: as run it gives %s; replayed, %s", d.Ran, d.Replayed)
	}
	return fmt.Sprintf("call #%d differs: as run, the code made %s; replayed, it makes %s", d.Position+1, call(d.Ran, d.RanSite), call(d.Replayed, d.ReplayedSite))
}

func call(desc string, s *Site) string {
	if desc == "" {
		return "no call"
	}
	return desc + " at " + s.String()
}

// Diverge compares two computations of the turn whose recorded history
// before it is history: ran, as computed (by held code, say), and
// replayed, computed by [Run] from history with [Input.Callers]. It
// returns nil when they are the same turn. Run's sites, when ran was
// computed with Callers too, name both calls' lines.
func Diverge(history []provider.Event, ran, replayed *Turn) *Divergence {
	if sameTurn(ran, replayed) {
		return nil
	}
	prior := calls(history)
	mine := slices.Concat(prior, calls(ran.Commit.HistoryDelta))
	theirs := slices.Concat(prior, calls(replayed.Commit.HistoryDelta))
	// A run that failed on a call history does not hold stopped there: the
	// other run's call at that position is the one history holds.
	if m := replayed.Mismatch; m != nil {
		d := &Divergence{Position: m.Position, Replayed: m.Call, ReplayedSite: m.Site}
		if m.Position < len(mine) {
			d.Ran, d.RanSite = mine[m.Position], siteAt(ran.Sites, m.Position)
		}
		return d
	}
	if m := ran.Mismatch; m != nil {
		d := &Divergence{Position: m.Position, Ran: m.Call, RanSite: m.Site}
		if m.Position < len(theirs) {
			d.Replayed, d.ReplayedSite = theirs[m.Position], siteAt(replayed.Sites, m.Position)
		}
		return d
	}
	for i := range max(len(mine), len(theirs)) {
		var a, b string
		if i < len(mine) {
			a = mine[i]
		}
		if i < len(theirs) {
			b = theirs[i]
		}
		if a != b {
			return &Divergence{Position: i, Ran: a, Replayed: b, RanSite: siteAt(ran.Sites, i), ReplayedSite: siteAt(replayed.Sites, i)}
		}
	}
	d := &Divergence{Position: -1, Ran: "outcome " + outcomeWord(ran), Replayed: "outcome " + outcomeWord(replayed)}
	a, b := ran.Commit.HistoryDelta, replayed.Commit.HistoryDelta
	for i := range max(len(a), len(b)) {
		if i >= len(a) || i >= len(b) || !bytes.Equal(wire(a[i]), wire(b[i])) {
			d.Ran, d.Replayed = eventAt(a, i), eventAt(b, i)
			break
		}
	}
	return d
}

func siteAt(sites []*Site, i int) *Site {
	if i < len(sites) {
		return sites[i]
	}
	return nil
}

// eventAt describes events[i] for a divergence: its type and fields.
func eventAt(events []provider.Event, i int) string {
	if i >= len(events) {
		return "no further event"
	}
	kind := events[i].Kind
	b, err := json.Marshal(kind)
	if err != nil {
		return kind.EventType()
	}
	return kind.EventType() + " " + string(b)
}

func outcomeWord(t *Turn) string {
	return map[Outcome]string{Continue: "continue", Completed: "completed", Failed: "failed", ContinuedAsNew: "continued as new", Drained: "drained"}[t.Outcome]
}

// calls describes the calls events record (schedules, custom status and
// KV events), in order, as the actions that emitted them.
func calls(events []provider.Event) []string {
	var out []string
	for _, ev := range events {
		if a, ok := actionOf(ev.Kind); ok {
			out = append(out, describeAction(&a))
		}
	}
	return out
}

// actionOf is the action an event records, for events that record one.
func actionOf(kind provider.EventKind) (Action, bool) {
	switch k := kind.(type) {
	case provider.ActivityScheduled:
		return Action{Kind: KindActivity, Name: k.Name, Input: k.Input, SessionID: k.SessionID, Tag: k.Tag}, true
	case provider.TimerCreated:
		return Action{Kind: KindTimer, FireAtMs: k.FireAtMs}, true
	case provider.ExternalSubscribed:
		return Action{Kind: KindExternal, Name: k.Name}, true
	case provider.QueueSubscribed:
		return Action{Kind: KindQueue, Name: k.Name}, true
	case provider.SubOrchestrationScheduled:
		return Action{Kind: KindSubOrchestration, Name: k.Name, Instance: k.Instance, Input: k.Input}, true
	case provider.OrchestrationChained:
		return Action{Kind: KindChained, Name: k.Name, Instance: k.Instance, Input: k.Input}, true
	case provider.CustomStatusUpdated:
		return Action{Kind: KindCustomStatus, Status: k.Status}, true
	case provider.KeyValueSet:
		return Action{Kind: KindKVSet, Key: k.Key, Value: k.Value}, true
	case provider.KeyValueCleared:
		return Action{Kind: KindKVClear, Key: k.Key}, true
	case provider.KeyValuesCleared:
		return Action{Kind: KindKVClearAll}, true
	}
	return Action{}, false
}

// sameTurn reports whether two computations of a turn are the same: the
// same outcome, output and commit (its events compared in wire form).
func sameTurn(a, b *Turn) bool {
	if a.Outcome != b.Outcome || a.Output != b.Output || !reflect.DeepEqual(a.Parent, b.Parent) {
		return false
	}
	x, y := a.Commit, b.Commit
	if x.ExecutionID != y.ExecutionID || len(x.HistoryDelta) != len(y.HistoryDelta) {
		return false
	}
	for i := range x.HistoryDelta {
		if !bytes.Equal(wire(x.HistoryDelta[i]), wire(y.HistoryDelta[i])) {
			return false
		}
	}
	return sameItems(x.WorkerItems, y.WorkerItems) && sameItems(x.OrchestratorItems, y.OrchestratorItems) &&
		sameItems(x.CancelledActivities, y.CancelledActivities) && reflect.DeepEqual(x.Metadata, y.Metadata)
}

// sameItems compares two lists, nil and empty alike.
func sameItems[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || reflect.DeepEqual(a, b))
}
