package console

import (
	"fmt"
	"strings"

	"github.com/duradyn/duradyn/provider"
)

// Timeline geometry, in SVG units (the drawing scales to the page).
const (
	tlWidth      = 1000
	tlLabelWidth = 230
	tlRowHeight  = 20
	tlAxisHeight = 24
)

// span is one stretch of an execution: the orchestration, an activity, a
// timer, a sub-orchestration, or a wait for an event or a queue message.
type span struct {
	kind       string // orchestration, activity, timer, sub, event, queue
	name       string
	id         uint64 // the event that began it
	start, end int64
	open       bool   // not ended in the history
	outcome    string // ok, failed, canceled, pending
	attempt    int    // activities: 1 for the first call of a name, more for retries
	link       string // sub-orchestrations: the child instance
	detail     string
}

// timeline is the drawing of an execution's spans.
type timeline struct {
	Height  int
	Rows    []tlRow
	Ticks   []tlTick
	Spans   int
	Grouped bool // one row per name rather than per span
	Retries int
	Failed  int
	Width   int
	Label   int
}

// tlRow is one row of the timeline.
type tlRow struct {
	Y, TextY int
	Label    string
	Kind     string
	Link     string
	Bars     []tlBar
}

// tlBar is one span drawn.
type tlBar struct {
	X, W  int
	Class string
	Title string
}

// tlTick is a time mark on the axis.
type tlTick struct {
	X     int
	Label string
	Last  bool // anchored at its end, so it stays inside the drawing
}

// buildTimeline draws history's spans: one row per span, or, beyond
// maxRows spans, one row per kind and name. now ends the spans still open.
func buildTimeline(history []provider.Event, now int64, maxRows int, instance string) timeline {
	spans := spansOf(history, instance)
	tl := timeline{Spans: len(spans), Width: tlWidth, Label: tlLabelWidth}
	if len(spans) == 0 {
		return tl
	}
	t0, t1 := spans[0].start, spans[0].start+1
	ended := history[len(history)-1].IsTerminal()
	for i := range spans {
		s := &spans[i]
		if s.open {
			switch {
			case s.kind == "timer" && s.end > s.start:
			case ended:
				s.end = int64(history[len(history)-1].TimestampMs)
			default:
				s.end = max(now, s.start)
			}
		}
		t0, t1 = min(t0, s.start), max(t1, s.end)
		if s.attempt > 1 {
			tl.Retries++
		}
		if s.outcome == "failed" {
			tl.Failed++
		}
	}
	if t1 <= t0 {
		t1 = t0 + 1
	}
	x := func(t int64) int {
		return tlLabelWidth + int(float64(t-t0)/float64(t1-t0)*float64(tlWidth-tlLabelWidth-10))
	}
	tl.Grouped = len(spans) > maxRows
	rows := map[string]int{}
	for _, s := range spans {
		key := fmt.Sprintf("%s#%d", s.kind, s.id)
		label := spanLabel(s, !tl.Grouped)
		if tl.Grouped {
			key = s.kind + "\x00" + s.name
		}
		i, ok := rows[key]
		if !ok {
			i = len(tl.Rows)
			rows[key] = i
			y := tlAxisHeight + i*tlRowHeight
			tl.Rows = append(tl.Rows, tlRow{Y: y + 3, TextY: y + 14, Label: label, Kind: s.kind, Link: s.link})
		}
		bx := x(s.start)
		tl.Rows[i].Bars = append(tl.Rows[i].Bars, tlBar{X: bx, W: max(x(s.end)-bx, 2), Class: barClass(s), Title: spanTitle(s, t0)})
	}
	tl.Height = tlAxisHeight + len(tl.Rows)*tlRowHeight + 4
	for i := range 5 {
		t := t0 + (t1-t0)*int64(i)/4
		tl.Ticks = append(tl.Ticks, tlTick{X: x(t), Label: "+" + fmtDuration(t-t0), Last: i == 4})
	}
	return tl
}

// spanLabel is a row's label.
func spanLabel(s span, withID bool) string {
	kind := map[string]string{"orchestration": "orchestration", "activity": "activity", "timer": "timer",
		"sub": "sub-orchestration", "event": "event", "queue": "queue"}[s.kind]
	label := kind + " " + s.name
	if s.kind == "timer" || s.kind == "orchestration" {
		label = kind
	}
	if withID && s.kind != "orchestration" {
		label += fmt.Sprintf(" #%d", s.id)
	}
	if s.attempt > 1 && withID {
		label += fmt.Sprintf(" (retry %d)", s.attempt-1)
	}
	return truncate(label, 40)
}

func barClass(s span) string {
	c := "bar bar-" + s.kind + " out-" + s.outcome
	if s.attempt > 1 {
		c += " retry"
	}
	return c
}

func spanTitle(s span, t0 int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: %s, from +%s for %s", s.kind, s.name, s.outcome, fmtDuration(s.start-t0), fmtDuration(s.end-s.start))
	if s.attempt > 1 {
		fmt.Fprintf(&b, " (attempt %d)", s.attempt)
	}
	if s.detail != "" {
		b.WriteString(": " + truncate(s.detail, 300))
	}
	return b.String()
}

// spansOf pairs history's events into spans, in the order they began.
func spansOf(history []provider.Event, instance string) []span {
	b := spanBuilder{instance: instance, byID: map[uint64]int{}, waits: map[string][]int{}, failedNames: map[string]int{}}
	for _, e := range history {
		b.add(e)
	}
	return b.spans
}

// orchestrationSpan is the key of the orchestration's own span (no event
// has id 0).
const orchestrationSpan uint64 = 0

// spanBuilder pairs events into spans.
type spanBuilder struct {
	instance    string
	spans       []span
	byID        map[uint64]int   // span by the id of the event that began it
	waits       map[string][]int // open event and queue waits per kind and name, oldest first
	failedNames map[string]int   // failed calls of each activity name since its last success
}

func (b *spanBuilder) open(s span) {
	b.byID[s.id] = len(b.spans)
	b.spans = append(b.spans, s)
}

// end ends the span begun by event src, if it is open.
func (b *spanBuilder) end(src *uint64, ts int64, outcome, detail string) {
	if src == nil {
		return
	}
	if i, ok := b.byID[*src]; ok && b.spans[i].open {
		s := &b.spans[i]
		s.end, s.open, s.outcome, s.detail = ts, false, outcome, detail
	}
}

// endWait ends the oldest open wait for key.
func (b *spanBuilder) endWait(key string, ts int64) {
	for len(b.waits[key]) > 0 {
		i := b.waits[key][0]
		b.waits[key] = b.waits[key][1:]
		if b.spans[i].open {
			id := b.spans[i].id
			b.end(&id, ts, "ok", "")
			return
		}
	}
}

// wait opens a wait for an event or a queue message.
func (b *spanBuilder) wait(s span) {
	key := s.kind + "\x00" + s.name
	b.waits[key] = append(b.waits[key], len(b.spans))
	b.open(s)
}

// add applies one event.
func (b *spanBuilder) add(e provider.Event) {
	ts := int64(e.TimestampMs)
	s := span{id: e.EventID, start: ts, end: ts, open: true, outcome: "pending"}
	orch := ptrTo(orchestrationSpan)
	switch k := e.Kind.(type) {
	case provider.OrchestrationStarted:
		s.kind, s.name, s.id = "orchestration", k.Name, orchestrationSpan
		b.open(s)
	case provider.OrchestrationCompleted:
		b.end(orch, ts, "ok", "")
	case provider.OrchestrationFailed:
		b.end(orch, ts, failedOrCanceled(k.Details), k.Details.DisplayMessage())
	case provider.OrchestrationContinuedAsNew:
		b.end(orch, ts, "ok", "continued as new")
	case provider.ActivityScheduled:
		s.kind, s.name, s.attempt = "activity", k.Name, 1+b.failedNames[k.Name]
		b.open(s)
	case provider.ActivityCompleted:
		if i, ok := b.byID[deref(e.SourceEventID)]; ok {
			delete(b.failedNames, b.spans[i].name)
		}
		b.end(e.SourceEventID, ts, "ok", "")
	case provider.ActivityFailed:
		if i, ok := b.byID[deref(e.SourceEventID)]; ok {
			b.failedNames[b.spans[i].name]++
		}
		b.end(e.SourceEventID, ts, failedOrCanceled(k.Details), k.Details.DisplayMessage())
	case provider.TimerCreated:
		s.kind, s.end = "timer", int64(k.FireAtMs)
		b.open(s)
	case provider.SubOrchestrationScheduled:
		s.kind, s.name, s.link = "sub", k.Name, childID(b.instance, k.Instance)
		b.open(s)
	case provider.SubOrchestrationFailed:
		b.end(e.SourceEventID, ts, failedOrCanceled(k.Details), k.Details.DisplayMessage())
	case provider.TimerFired, provider.SubOrchestrationCompleted:
		b.end(e.SourceEventID, ts, "ok", "")
	case provider.ActivityCancelRequested, provider.SubOrchestrationCancelRequested,
		provider.ExternalSubscribedCancelled, provider.QueueSubscriptionCancelled:
		b.end(e.SourceEventID, ts, "canceled", cancelReason(k))
	case provider.ExternalSubscribed:
		s.kind, s.name = "event", k.Name
		b.wait(s)
	case provider.ExternalEvent:
		b.endWait("event\x00"+k.Name, ts)
	case provider.QueueSubscribed:
		s.kind, s.name = "queue", k.Name
		b.wait(s)
	case provider.QueueEventDelivered:
		b.endWait("queue\x00"+k.Name, ts)
	}
}

// cancelReason is the reason of a cancellation event.
func cancelReason(k provider.EventKind) string {
	switch k := k.(type) {
	case provider.ActivityCancelRequested:
		return k.Reason
	case provider.SubOrchestrationCancelRequested:
		return k.Reason
	case provider.ExternalSubscribedCancelled:
		return k.Reason
	case provider.QueueSubscriptionCancelled:
		return k.Reason
	}
	return ""
}

// failedOrCanceled is a failure's outcome.
func failedOrCanceled(d provider.ErrorDetails) string {
	if app, ok := d.(provider.ApplicationDetails); ok && app.Kind.Code == provider.AppCancelled {
		return "canceled"
	}
	return "failed"
}

// childID is the id of the child instance a SubOrchestrationScheduled
// names: ids the runtime chose ("sub::...") are relative to the parent.
func childID(parent, scheduled string) string {
	if strings.HasPrefix(scheduled, "sub::") {
		return parent + "::" + scheduled
	}
	return scheduled
}

func ptrTo[T any](v T) *T { return &v }

func deref(p *uint64) uint64 {
	if p == nil {
		return ^uint64(0)
	}
	return *p
}
