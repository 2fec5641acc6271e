package dynamo

import (
	"context"
	"strings"
)

// The lock row's record of the history the last turn left
// (lockRow.histEnd): its execution and its number of events.
const (
	attrHistExec = "hexec"
	attrHistLen  = "hlen"
)

// A fetch reads the history after it has locked the instance, but a Query
// is read-committed across items: one that runs while the previous turn's
// transaction is still making its rows visible can miss the newest events,
// and a turn replayed on them writes event ids that exist (a duplicate
// event, which fails the orchestration). Every release of a turn records
// how many events the history it leaves holds; a history read with fewer
// is read again (kvdigest.go does the same for the KV rows). Only turns
// add events to a history; AppendWithExecution removes the record.

// historyEnd is an execution and the number of events of its history.
type historyEnd struct{ exec, events uint64 }

// withHistoryEnd is the release with the end of the history the turn
// leaves recorded, or the record removed when end is nil (unknown).
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

// settledHistory returns execution executionID's history rows, read again
// while they hold fewer events than lock (the lock row the fetch read)
// says the last turn left, a few times; the last read is returned either
// way.
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
