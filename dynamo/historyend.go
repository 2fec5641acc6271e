package dynamo

import (
	"context"
	"strings"

	"github.com/dynoxide/dynoxide/dynamo/internal/keys"
)

// The lock row's record of where the current history ends
// (lockRow.histEnd): the execution and its last event id.
const (
	attrHistExec = "hexec"
	attrHistLast = "hlast"
)

// A fetch reads the history after it has locked the instance, but a Query
// is read-committed across items: one that runs while the previous turn's
// transaction is still making its rows visible can miss the newest events,
// and a turn replayed on them writes event ids that exist (a duplicate
// event, which fails the orchestration). Every release of a turn records
// where the history it leaves ends; a history read that ends elsewhere is
// read again (kvdigest.go does the same for the KV rows).

// historyEnd is the execution and the last event id of a history.
type historyEnd struct{ exec, last uint64 }

// withHistoryEnd is the release with the end of the history the turn
// leaves recorded, or the record removed when end is nil (unknown).
func (r lockRelease) withHistoryEnd(end *historyEnd) lockRelease {
	r.names["#hexec"], r.names["#hlast"] = attrHistExec, attrHistLast
	if end == nil {
		r.expr = strings.Replace(r.expr, "REMOVE ", "REMOVE #hexec, #hlast, ", 1)
		return r
	}
	r.expr = strings.Replace(r.expr, "SET ", "SET #hexec = :hexec, #hlast = :hlast, ", 1)
	r.values[":hexec"], r.values[":hlast"] = nu(end.exec), nu(end.last)
	return r
}

// lastEventID is the id of the last event of history rows (0 for none).
func lastEventID(rows []item) uint64 {
	if len(rows) == 0 {
		return 0
	}
	sk, _, _ := strAttr(rows[len(rows)-1], attrSK)
	_, id, _ := keys.ParseHistorySK(sk)
	return id
}

// settledHistory returns execution executionID's history rows, read again
// while they do not end where lock (the lock row the fetch read) says the
// last turn left them, a few times; the last read is returned either way
// (a history changed outside turns never matches until a turn's ack
// records it).
func (p *Provider) settledHistory(ctx context.Context, instance string, executionID uint64, lock lockRow, rows []item) ([]item, error) {
	end := lock.histEnd
	if end == nil || end.exec != executionID || lock.turn != "" {
		return rows, nil
	}
	for attempt := range maxTornRereads {
		if lastEventID(rows) == end.last {
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
	if lastEventID(rows) != end.last {
		p.o.Logf("dynamo: history of instance %q ends at event %d where its last turn left it at %d (written outside turns?); fetching on it", instance, lastEventID(rows), end.last)
	}
	return rows, nil
}
