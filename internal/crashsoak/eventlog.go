package crashsoak

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// eventLog collects the events of every worker process.
type eventLog struct {
	mu      sync.Mutex
	ready   map[string]bool
	holds   map[string][]event // by process
	drops   map[string]bool    // by process and key
	picks   map[string][]pick  // by key
	changed chan struct{}      // closed and replaced at each event
}

// pick is a fetch of work by a process.
type pick struct {
	process, kind string
	at            time.Time
}

func newEventLog() *eventLog {
	return &eventLog{ready: map[string]bool{}, holds: map[string][]event{}, drops: map[string]bool{}, picks: map[string][]pick{}, changed: make(chan struct{})}
}

// add records a line process printed.
func (l *eventLog) add(process, line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch ev, ok := parseEvent(line); {
	case strings.HasPrefix(line, "READY "):
		l.ready[process] = true
	case ok && ev.verb == "HOLD":
		l.holds[process] = append(l.holds[process], ev)
	case ok && ev.verb == "DROP":
		l.drops[process+" "+ev.key] = true
	case ok && ev.verb == "PICK":
		l.picks[ev.key] = append(l.picks[ev.key], pick{process: process, kind: ev.kind, at: ev.at})
	default:
		return
	}
	close(l.changed)
	l.changed = make(chan struct{})
}

// isReady reports whether process's runtime runs.
func (l *eventLog) isReady(process string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ready[process]
}

// held counts the items of kind process holds.
func (l *eventLog) held(process, kind string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, ev := range l.holds[process] {
		if ev.kind == kind {
			n++
		}
	}
	return n
}

// heldBy returns what process holds.
func (l *eventLog) heldBy(process string) []event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]event(nil), l.holds[process]...)
}

// pickedAfter returns when a process other than victim first fetched the
// work of ev at or after killed; zero when none has.
func (l *eventLog) pickedAfter(ev event, victim string, killed time.Time) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	kind := "activity"
	if ev.kind == KindTurn {
		kind = "turn"
	}
	for _, p := range l.picks[ev.key] {
		// Stamps have millisecond precision: a fetch in the kill's
		// millisecond counts.
		if p.process != victim && p.kind == kind && !p.at.Before(killed.Truncate(time.Millisecond)) {
			return p.at
		}
	}
	return time.Time{}
}

// releasedBefore reports whether victim no longer held the work of ev at
// killed: it let go of it alive (DROP), or a process fetched it again after
// the victim took it (the fetch that took it reported before the hold) and
// before the kill, the victim's lease over.
func (l *eventLog) releasedBefore(ev event, victim string, killed time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.drops[victim+" "+ev.key] {
		return true
	}
	for _, p := range l.picks[ev.key] {
		if p.at.After(ev.at) && p.at.Before(killed.Truncate(time.Millisecond)) {
			return true
		}
	}
	return false
}

// errTimeout is waitFor's error when the condition did not hold in time.
var errTimeout = errors.New("timed out")

// errExited is waitFor's error when the process it watches exited first.
var errExited = errors.New("process exited")

// waitFor waits until cond holds, re-checking it at each event, for at most
// timeout; exited, when set, ends the wait early with errExited.
func (l *eventLog) waitFor(timeout time.Duration, exited <-chan struct{}, cond func() bool) error {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		l.mu.Lock()
		changed := l.changed
		l.mu.Unlock()
		if cond() {
			return nil
		}
		select {
		case <-changed:
		case <-exited:
			if cond() {
				return nil
			}
			return errExited
		case <-timer.C:
			return errTimeout
		}
	}
}

// picksBy counts the fetches of keys with prefix, by process and kind.
func (l *eventLog) picksBy(prefix string) map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := map[string]int{}
	for key, ps := range l.picks {
		if strings.HasPrefix(key, prefix) {
			for _, p := range ps {
				n[p.process+" "+p.kind]++
			}
		}
	}
	return n
}

// picksOf describes the fetches of key, timed from killed.
func (l *eventLog) picksOf(key string, killed time.Time) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, p := range l.picks[key] {
		out = append(out, fmt.Sprintf("%s %s at %+v", p.process, p.kind, p.at.Sub(killed).Round(time.Millisecond)))
	}
	return strings.Join(out, ", ")
}
