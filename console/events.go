package console

import (
	"fmt"

	"github.com/duradyn/duradyn/provider"
)

// eventRow is one history event in the table.
type eventRow struct {
	ID      uint64
	Source  string
	Time    uint64
	Offset  string
	Type    string
	Summary string
	Class   string // "failed", "retry", "cancel" or ""
	Link    string // a child instance
	Payload *payload
}

// eventRows lists up to limit events of history, and how many more there
// are.
func eventRows(history []provider.Event, limit int, instance string) ([]eventRow, int) {
	more := 0
	if len(history) > limit {
		more = len(history) - limit
		history = history[:limit]
	}
	var t0 uint64
	if len(history) > 0 {
		t0 = history[0].TimestampMs
	}
	rows := make([]eventRow, 0, len(history))
	failedNames := map[string]bool{}
	names := map[uint64]string{}
	for _, e := range history {
		row := eventRow{ID: e.EventID, Time: e.TimestampMs, Type: e.Kind.EventType()}
		if e.TimestampMs >= t0 {
			row.Offset = "+" + fmtDuration(int64(e.TimestampMs-t0))
		}
		if e.SourceEventID != nil {
			row.Source = fmt.Sprint(*e.SourceEventID)
		}
		describeEvent(&row, e, instance)
		switch k := e.Kind.(type) {
		case provider.ActivityScheduled:
			names[e.EventID] = k.Name
			if failedNames[k.Name] {
				row.Class, row.Summary = "retry", row.Summary+" (retry)"
			}
		case provider.ActivityFailed:
			failedNames[names[deref(e.SourceEventID)]] = true
		case provider.ActivityCompleted:
			delete(failedNames, names[deref(e.SourceEventID)])
		}
		rows = append(rows, row)
	}
	return rows, more
}

// describeEvent sets row's summary, class, link and payload from e.
func describeEvent(row *eventRow, e provider.Event, instance string) {
	set := func(summary, data string) {
		row.Summary = summary
		if data != "" {
			p := newPayload(data)
			row.Payload = &p
		}
	}
	switch k := e.Kind.(type) {
	case provider.OrchestrationStarted:
		set(k.Name+" "+k.Version, k.Input)
	case provider.OrchestrationCompleted:
		set("completed", k.Output)
	case provider.OrchestrationFailed:
		row.Class = failClass(k.Details)
		set(k.Details.DisplayMessage(), "")
	case provider.OrchestrationContinuedAsNew:
		set("continued as new", k.Input)
	case provider.OrchestrationCancelRequested:
		row.Class = "cancel"
		set("cancel requested: "+k.Reason, "")
	case provider.OrchestrationChained:
		row.Link = k.Instance
		set(k.Name+" → "+k.Instance, k.Input)
	case provider.ActivityScheduled:
		set(k.Name, k.Input)
	case provider.ActivityCompleted:
		set("result", k.Result)
	case provider.ActivityFailed:
		row.Class = failClass(k.Details)
		set(k.Details.DisplayMessage(), "")
	case provider.ActivityCancelRequested, provider.SubOrchestrationCancelRequested, provider.ExternalSubscribedCancelled, provider.QueueSubscriptionCancelled:
		row.Class = "cancel"
		set("canceled", "")
	case provider.TimerCreated:
		set("fires at "+fmtMs(k.FireAtMs), "")
	case provider.TimerFired:
		set("fired", "")
	case provider.ExternalSubscribed:
		set("waits for event "+k.Name, "")
	case provider.ExternalEvent:
		set("event "+k.Name, k.Data)
	case provider.SubOrchestrationScheduled:
		row.Link = childID(instance, k.Instance)
		set(k.Name+" → "+row.Link, k.Input)
	case provider.SubOrchestrationCompleted:
		set("result", k.Result)
	case provider.SubOrchestrationFailed:
		row.Class = failClass(k.Details)
		set(k.Details.DisplayMessage(), "")
	case provider.QueueSubscribed:
		set("waits for queue "+k.Name, "")
	case provider.QueueEventDelivered:
		set("queue message "+k.Name, k.Data)
	case provider.CustomStatusUpdated:
		if k.Status == nil {
			set("custom status cleared", "")
		} else {
			set("custom status", *k.Status)
		}
	case provider.KeyValueSet:
		set("set "+k.Key, k.Value)
	case provider.KeyValueCleared:
		set("cleared "+k.Key, "")
	case provider.KeyValuesCleared:
		set("cleared all keys", "")
	}
}

func failClass(d provider.ErrorDetails) string {
	if failedOrCanceled(d) == "canceled" {
		return "cancel"
	}
	return "failed"
}

// waitItem is something a running instance waits for.
type waitItem struct {
	Kind, Name, Detail, Link string
	Since                    uint64
}

// waitingFor lists what the current execution waits for: activities,
// timers, sub-orchestrations, events and queue messages whose spans are
// open.
func waitingFor(history []provider.Event, instance string) []waitItem {
	var out []waitItem
	for _, s := range spansOf(history, instance) {
		if !s.open || s.kind == "orchestration" {
			continue
		}
		w := waitItem{Kind: s.kind, Name: s.name, Since: uint64(s.start), Link: s.link}
		switch s.kind {
		case "activity":
			w.Detail = fmt.Sprintf("activity #%d", s.id)
			if s.attempt > 1 {
				w.Detail += fmt.Sprintf(", attempt %d", s.attempt)
			}
		case "timer":
			w.Detail = "fires at " + fmtMs(uint64(max(s.end, 0)))
		case "sub":
			w.Detail = "sub-orchestration " + s.link
		case "event":
			w.Detail = "external event"
		case "queue":
			w.Detail = "queue message"
		}
		out = append(out, w)
	}
	return out
}
