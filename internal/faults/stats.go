package faults

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Stats counts what an [Injector] saw and did while enabled, over every
// client it wraps.
type Stats struct {
	// Requests counts the calls made through the wrappers, whatever
	// happened to them.
	Requests int64
	// Faults counts faults by kind: each time a rule fired, plus real
	// conflicts, lagged queries and duplicate deliveries (per message).
	Faults map[Kind]int64
	// Ops breaks the counts down per operation name ("PutItem", ...).
	Ops map[string]OpStats
}

// OpStats counts the calls of one operation and the faults they met.
type OpStats struct {
	// Requests counts the calls.
	Requests int64
	// Faults counts faults by kind.
	Faults map[Kind]int64
}

// String summarises the counts on one line, operations in name order and
// kinds in the order of their constants, for example
//
//	requests 12 (PutItem 4, Query 8); throttle 2 (PutItem 2); lagged query 8 (Query 8)
func (s Stats) String() string {
	var b strings.Builder
	ops := slices.Sorted(maps.Keys(s.Ops))
	fmt.Fprintf(&b, "requests %d", s.Requests)
	b.WriteString(breakdown(ops, func(op string) int64 { return s.Ops[op].Requests }))
	for _, k := range kinds {
		if s.Faults[k] == 0 {
			continue
		}
		fmt.Fprintf(&b, "; %s %d", k, s.Faults[k])
		b.WriteString(breakdown(ops, func(op string) int64 { return s.Ops[op].Faults[k] }))
	}
	return b.String()
}

// breakdown formats the non-zero counts of ops as " (A 1, B 2)", or ""
// when there are none.
func breakdown(ops []string, count func(string) int64) string {
	var parts []string
	for _, op := range ops {
		if n := count(op); n != 0 {
			parts = append(parts, fmt.Sprintf("%s %d", op, n))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// counters is the mutable form of [Stats], guarded by the injector's
// mutex.
type counters struct {
	requests map[string]int64
	faults   map[string]map[Kind]int64
}

func (c *counters) request(op string) {
	if c.requests == nil {
		c.requests = map[string]int64{}
	}
	c.requests[op]++
}

func (c *counters) fault(op string, k Kind, n int64) {
	if c.faults == nil {
		c.faults = map[string]map[Kind]int64{}
	}
	if c.faults[op] == nil {
		c.faults[op] = map[Kind]int64{}
	}
	c.faults[op][k] += n
}

func (c *counters) snapshot() Stats {
	s := Stats{Faults: map[Kind]int64{}, Ops: map[string]OpStats{}}
	for op, n := range c.requests {
		o := s.Ops[op]
		o.Requests = n
		s.Ops[op] = o
		s.Requests += n
	}
	for op, byKind := range c.faults {
		o := s.Ops[op]
		o.Faults = maps.Clone(byKind)
		s.Ops[op] = o
		for k, n := range byKind {
			s.Faults[k] += n
		}
	}
	return s
}
