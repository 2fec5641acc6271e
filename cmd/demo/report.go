package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/provider"
)

// report renders the summary: each order's outcome, the first order's
// history as a table, and the DynamoDB requests.
func (r *result) report() string {
	var b strings.Builder
	rule := strings.Repeat("─", 100)
	fmt.Fprintf(&b, "\n%s\nSummary: %d orders in %v\n\n", rule, len(r.orders), r.elapsed.Round(100*time.Millisecond))

	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  order\toutcome\tevents\telapsed\tnodes\tdetail")
	for _, o := range r.orders {
		state := "?"
		if o.status != nil {
			state = o.status.State.String()
		}
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%v\t%s\t%s\n", o.order.ID, state, o.events,
			o.elapsed.Round(100*time.Millisecond), strings.Join(o.nodes, ", "), o.detail())
	}
	tw.Flush()

	if len(r.orders) > 0 && len(r.history) > 0 {
		fmt.Fprintf(&b, "\nHistory of %s (%d events)\n\n", r.orders[0].order.ID, len(r.history))
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  id\tat\ttype\tsource\tsummary")
		t0 := r.history[0].TimestampMs
		for _, e := range r.history {
			source := ""
			if e.SourceEventID != nil {
				source = fmt.Sprint(*e.SourceEventID)
			}
			fmt.Fprintf(tw, "  %d\t+%.3fs\t%s\t%s\t%s\n", e.EventID, since(t0, e.TimestampMs), e.Kind.EventType(), source, summarize(e, t0))
		}
		tw.Flush()
	}

	fmt.Fprintf(&b, "\nDynamoDB requests\n\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "  \trequests\tcapacity units\t  by operation\t")
	var total, nodes int
	var capacity float64
	all := map[string]int{}
	for _, who := range []string{nodeA, nodeB, clientName} {
		u := r.usage[who]
		total += u.Total()
		capacity += u.TotalCapacity()
		if who != clientName {
			nodes += u.Total()
		}
		for op, n := range u.Requests {
			all[op] += n
		}
		fmt.Fprintf(tw, "  %s\t%d\t%.1f\t  %s\t\n", who, u.Total(), u.TotalCapacity(), byOperation(u.Requests))
	}
	fmt.Fprintf(tw, "  total\t%d\t%.1f\t  %s\t\n", total, capacity, byOperation(all))
	tw.Flush()
	if r.activities > 0 {
		fmt.Fprintf(&b, "\n  %d activities ran: %.1f requests per activity round trip (the nodes' %d requests ÷ %d;\n"+
			"  the turns around them, timers, sub-orchestrations and idle polling included)\n",
			r.activities, float64(nodes)/float64(r.activities), nodes, r.activities)
	}
	fmt.Fprintf(&b, "%s\n", rule)
	return b.String()
}

// detail is one line on how an order ended.
func (o orderResult) detail() string {
	st := o.status
	if st == nil {
		return "no result"
	}
	var parts []string
	switch st.State {
	case durable.StateCompleted:
		var rc Receipt
		if err := json.Unmarshal([]byte(st.Output), &rc); err != nil {
			parts = append(parts, st.Output)
		} else {
			parts = append(parts, fmt.Sprintf("%s, %s, tracking %s, delivery %s", money(rc.TotalCents), rc.AuthCode, rc.Tracking, rc.Delivery))
		}
	case durable.StateFailed:
		parts = append(parts, st.Failure.DisplayMessage())
	default:
		parts = append(parts, st.State.String())
	}
	if o.child != nil && o.child.State == durable.StateFailed {
		parts = append(parts, fmt.Sprintf("%s: %s", shipInstance(o.order.ID), o.child.Failure.DisplayMessage()))
	}
	if v, ok := o.kv[kvState]; ok {
		parts = append(parts, kvState+"="+v)
	}
	return strings.Join(parts, "; ")
}

// summarize describes an event in a few words; t0 is the first event's
// timestamp.
func summarize(e provider.Event, t0 uint64) string {
	switch k := e.Kind.(type) {
	case provider.OrchestrationStarted:
		return fmt.Sprintf("%s %s %s", k.Name, k.Version, clip(k.Input))
	case provider.OrchestrationCompleted:
		return clip(k.Output)
	case provider.OrchestrationFailed:
		return clip(k.Details.DisplayMessage())
	case provider.OrchestrationCancelRequested:
		return k.Reason
	case provider.ActivityScheduled:
		return fmt.Sprintf("%s %s", k.Name, clip(k.Input))
	case provider.ActivityCompleted:
		return clip(k.Result)
	case provider.ActivityFailed:
		return clip(k.Details.DisplayMessage())
	case provider.ActivityCancelRequested:
		return k.Reason
	case provider.TimerCreated:
		return fmt.Sprintf("fires at +%.3fs", since(t0, k.FireAtMs))
	case provider.TimerFired:
		return fmt.Sprintf("was due at +%.3fs", since(t0, k.FireAtMs))
	case provider.ExternalSubscribed:
		return k.Name
	case provider.ExternalEvent:
		return fmt.Sprintf("%s %s", k.Name, clip(k.Data))
	case provider.ExternalSubscribedCancelled:
		return k.Reason
	case provider.SubOrchestrationScheduled:
		return fmt.Sprintf("%s as %s", k.Name, k.Instance)
	case provider.SubOrchestrationCompleted:
		return clip(k.Result)
	case provider.SubOrchestrationFailed:
		return clip(k.Details.DisplayMessage())
	case provider.SubOrchestrationCancelRequested:
		return k.Reason
	case provider.CustomStatusUpdated:
		if k.Status == nil {
			return "(cleared)"
		}
		return *k.Status
	case provider.KeyValueSet:
		return k.Key + " = " + k.Value
	case provider.KeyValueCleared:
		return k.Key
	}
	return ""
}

// since is the seconds from t0 to ms, both epoch milliseconds.
func since(t0, ms uint64) float64 { return float64(int64(ms)-int64(t0)) / 1000 }

// clip shortens s to one table cell.
func clip(s string) string {
	const max = 72
	if r := []rune(s); len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return s
}

func byOperation(reqs map[string]int) string {
	ops := slices.Sorted(maps.Keys(reqs))
	slices.SortStableFunc(ops, func(a, b string) int { return reqs[b] - reqs[a] })
	parts := make([]string, len(ops))
	for i, op := range ops {
		parts[i] = fmt.Sprintf("%s %d", op, reqs[op])
	}
	return strings.Join(parts, ", ")
}

// cancelReasonOf returns the reason of a cancellation failure.
func cancelReasonOf(st *durable.Status) (string, bool) {
	if st == nil || st.State != durable.StateFailed {
		return "", false
	}
	d, ok := st.Failure.(provider.ApplicationDetails)
	if !ok || d.Kind.Code != provider.AppCancelled {
		return "", false
	}
	return d.Kind.Reason, true
}

// check returns an error unless every order ended as the demo intends.
func (r *result) check() error {
	var errs []error
	for _, o := range r.orders {
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("%s: "+format, append([]any{o.order.ID}, args...)...))
		}
		if o.status == nil {
			bad("no final status")
			continue
		}
		switch {
		case o.order.ID == cancelOrder:
			if _, ok := cancelReasonOf(o.status); !ok {
				bad("want cancelled, got %s %v", o.status.State, o.status.Failure)
			}
			if _, ok := cancelReasonOf(o.child); !ok {
				bad("want its ShipOrder cancelled, got %+v", o.child)
			}
		case o.order.Card == declinedCard:
			if o.status.State != durable.StateFailed || !strings.Contains(o.status.Failure.DisplayMessage(), "declined") {
				bad("want failed with a decline, got %s %v", o.status.State, o.status.Failure)
			}
			if o.kv[kvState] != "compensated" {
				bad("want %s=compensated, got %q", kvState, o.kv[kvState])
			}
		default:
			rc, err := durable.Output[Receipt](o.status)
			if err != nil {
				bad("want completed: %v", err)
			} else if !strings.HasPrefix(rc.Delivery, "signed by") {
				bad("want a confirmed delivery, got %q", rc.Delivery)
			}
			if o.child == nil || o.child.State != durable.StateCompleted {
				bad("want its ShipOrder completed, got %+v", o.child)
			}
		}
	}
	return errors.Join(errs...)
}
