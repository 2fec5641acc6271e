package dynamo

import (
	"slices"
	"testing"
	"time"
)

// TestSpreadClaimsDrawsNoSessionsActivity: in a contended shard the first
// row tried is drawn among the oldest activities without a session; a
// session's activities are never drawn, and keep their order among the
// rest, which are tried oldest first.
func TestSpreadClaimsDrawsNoSessionsActivity(t *testing.T) {
	// Rows 0 to 19 oldest first; 1, 2 and 5 belong to sessions.
	var rows []readyRow
	for i := range 20 {
		r := item{attrSK: s(string(rune('a' + i)))}
		if i == 1 || i == 2 || i == 5 {
			r[attrSession] = s("s")
		}
		rows = append(rows, readyRow{sk: string(rune('a' + i)), shard: 3, row: r})
	}
	order := func(rows []readyRow) string {
		var b []byte
		for _, r := range rows {
			b = append(b, r.sk...)
		}
		return string(b)
	}
	p := &Provider{o: Options{Now: time.Now}, hints: newHints()}
	var draws []int
	p.spread = func(n int) int { draws = append(draws, n); return n - 1 }
	if got := order(p.spreadClaims(slices.Clone(rows), 3)); got != order(rows) {
		t.Errorf("uncontended order %q, want oldest first %q", got, order(rows))
	}
	if len(draws) != 0 {
		t.Errorf("an uncontended shard drew (%v)", draws)
	}
	p.hints.contend(3, p.nowMs())
	// 13 of the 16 oldest have no session; the last of them, p, goes first.
	if got, want := order(p.spreadClaims(slices.Clone(rows), 3)), "pabcdefghijklmnoqrst"; got != want {
		t.Errorf("contended order %q, want %q", got, want)
	}
	if !slices.Equal(draws, []int{13}) {
		t.Errorf("draws %v, want one among the 13 oldest rows without a session", draws)
	}
	p.spread = func(n int) int { return 1 } // the second without a session: d
	if got, want := order(p.spreadClaims(slices.Clone(rows), 3)), "dabcefghijklmnopqrst"; got != want {
		t.Errorf("contended order %q, want %q", got, want)
	}
	if got := order(p.spreadClaims(slices.Clone(rows), 2)); got != order(rows) {
		t.Errorf("another shard's order %q, want oldest first", got)
	}
}
