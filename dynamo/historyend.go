package dynamo

import (
	"context"
	"strings"
)

// The lock row's record of the history the last turn left: its execution
// and number of events.
const (
	attrHistExec = "hexec"
	attrHistLen  = "hlen"
)

// A history read torn by the previous turn's commit can miss its newest
// events, and a turn replayed on them would rewrite existing ids; a read
// with fewer events than recorded is read again (docs/design.md §5, torn
// reads). AppendWithExecution removes the record.

// historyEnd is an execution and the number of events of its history.
type historyEnd struct{ exec, events uint64 }

// withHistoryEnd records end on the release, or removes the record when
// end is nil (unknown).
func (r lockRelease) withHistoryEnd(end *historyEnd) lockRelease {
	r.names["#hexec"], r.names["#hlen"] = attrHistExec, attrHistLen
	if end == nil {
		r.expr = strings.Replace(r.expr, "REMOVE ", "REMOVE #hexec, #hlen, ", 1)
		return r
	}
	r.expr = strings.Replace(r.expr, "SET ", "SET #hexec = :hexec, #hlen = :hlen, ", 1)
	r.values[":hexec"], r.values[":hlen"] = nu(end.exec), nu(end.events)
	return r
}

// settledHistory re-reads the history rows a few times while they hold
// fewer events than lock records; the last read is returned either way.
func (p *Provider) settledHistory(ctx context.Context, instance string, executionID uint64, lock lockRow, rows []item) ([]item, error) {
	end := lock.histEnd
	if end == nil || end.exec != executionID || lock.turn != "" {
		return rows, nil
	}
	for attempt := range maxTornRereads {
		if historyEvents(rows) >= end.events {
			return rows, nil
		}
		if err := sleepCtx(ctx, tornRereadPause<<attempt); err != nil {
			return nil, err
		}
		next, err := p.historyRows(ctx, instance, executionID)
		if err != nil {
			return nil, err
		}
		rows = next
	}
	if read := historyEvents(rows); read < end.events {
		p.o.Logger.Warn("dynamo: history holds fewer events than the last turn left; fetching on it", "instance", instance, "events", read, "events_left", end.events)
	}
	return rows, nil
}
