package dynamo

import "time"

// Leases of other processes that a worker sweep watches (docs/design.md §8,
// "Sweeps"). A claimed activity row stays in the ready index with its ready
// key at the lease's end (claims, hand-offs and renewals move it there), so
// a Scan of the index, which bills the rows it evaluates whatever its
// filter returns, shows the leases of every process for nothing more than
// a larger response: the sweep's filter returns the rows that are leased
// (lock_until set, projected into the index) beside the eligible ones. The
// leases this process holds, and rows its fetch could not take, are left
// out by the fetch's filter (workFetch.keep); the earliest end of the rest
// brings the process's next sweep forward to it (sweepSchedule.watch), so
// that an activity whose process died is taken as soon as its lease ends
// instead of at a sweep up to an interval later. Sweeps that query the
// shards (an index past the Scan's limit) read only eligible rows, and
// watch nothing.

// leaseWatch collects the earliest end of the leases one sweep saw held by
// other processes.
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

// apply brings the next sweep of s forward to the earliest lease end seen,
// nowMs being the provider's clock; nothing when no lease was seen.
func (w *leaseWatch) apply(s *sweepSchedule, nowMs int64) {
	if w == nil || w.endMs == 0 {
		return
	}
	s.watch(time.Now(), time.Duration(w.endMs-nowMs)*time.Millisecond)
}

// scanFilter is the filter of a sweep's Scan: the eligible rows of the
// queue with :prefix, and, when watching, its leased rows too.
func scanFilter(watching bool) (expr string, names map[string]string) {
	names = map[string]string{"#rp": attrReadyPK, "#rs": attrReadySK}
	if !watching {
		return "begins_with(#rp, :prefix) AND #rs < :bound", names
	}
	names["#lu"] = attrLockUntil
	return "begins_with(#rp, :prefix) AND (#rs < :bound OR attribute_exists(#lu))", names
}

// leased reports whether a row a watching Scan returned is a lease rather
// than an eligible row (its ready key at or past bound), recording it in
// w.
func (w *leaseWatch) leased(readySK, bound string) bool {
	if w == nil || readySK < bound {
		return false
	}
	w.saw(readySK)
	return true
}

// handOnRows returns the rows of a worker sweep, beyond the one its fetch
// took, that go to the process's other fetches at once: those eligible
// for handOutAge (a younger row's signal is likely on its way), and those
// whose lease ended (lock_until is still set: a claim left it, and no
// abandon or ack came), which no signal will ever announce, since their
// holder stopped: the work a dead process held goes to every waiting
// fetch of the sweep's process when its lease ends, not one row a sweep.
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
