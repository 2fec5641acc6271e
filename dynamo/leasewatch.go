package dynamo

import "time"

// Lease watching (docs/design.md §8, "Sweeps"): a claimed activity row keeps
// its ready key at its lease's end, so a worker sweep's Scan, which bills
// every row it evaluates anyway, also returns other processes' leased rows.
// The earliest lease end brings the next sweep forward (sweepSchedule.watch)
// so that a dead process's activity is taken when its lease ends. Sweeps by
// shard watch nothing.

// leaseWatch collects the earliest end of other processes' leases a sweep saw.
type leaseWatch struct {
	endMs int64 // 0: none seen
}

// saw records a lease row whose ready key is readySK.
func (w *leaseWatch) saw(readySK string) {
	at, ok := readyAt(readySK)
	if ok && (w.endMs == 0 || at < w.endMs) {
		w.endMs = at
	}
}

// apply brings s's next sweep forward to the earliest lease end seen (nowMs:
// the provider's clock).
func (w *leaseWatch) apply(s *sweepSchedule, nowMs int64) {
	if w == nil || w.endMs == 0 {
		return
	}
	s.watch(time.Now(), time.Duration(w.endMs-nowMs)*time.Millisecond)
}

// scanFilter is a sweep Scan's filter: the queue's eligible rows, and its
// leased rows too when watching.
func scanFilter(watching bool) (expr string, names map[string]string) {
	names = map[string]string{"#rp": attrReadyPK, "#rs": attrReadySK}
	if !watching {
		return "begins_with(#rp, :prefix) AND #rs < :bound", names
	}
	names["#lu"] = attrLockUntil
	return "begins_with(#rp, :prefix) AND (#rs < :bound OR attribute_exists(#lu))", names
}

// leased reports, and records in w, whether a row a watching Scan returned
// is a lease (ready key at or past bound) rather than an eligible row.
func (w *leaseWatch) leased(readySK, bound string) bool {
	if w == nil || readySK < bound {
		return false
	}
	w.saw(readySK)
	return true
}

// handOnRows returns the rows of a worker sweep, beyond the one its fetch
// took, for the process's other fetches: those eligible for handOutAge, and
// those whose lease ended (lock_until still set), which no signal will
// announce since their holder stopped.
func handOnRows(rows []readyRow, nowMs int64) []readyRow {
	var out []readyRow
	for _, r := range rows {
		at, ok := readyAt(r.readySK)
		if !ok {
			continue
		}
		if _, leased := r.row[attrLockUntil]; leased || at <= nowMs-handOutAge.Milliseconds() {
			out = append(out, r)
		}
	}
	return out
}
