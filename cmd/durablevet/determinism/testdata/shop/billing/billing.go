// Package billing calls into package clock: its facts name a chain of calls
// across two packages.
package billing

import "example.com/shop/clock"

// Due stamps an invoice through clock.Stamp.
func Due() string { // want Due:`^time\.Now through billing\.Due -> clock\.Stamp -> clock\.now \(clock\.go:19\)$`
	return clock.Stamp().String()
}

// Sum calls only deterministic code: it has no fact.
func Sum(a, b int) int { return clock.Add(a, b) }
