package dynamo

import (
	"testing"

	"github.com/duradyn/duradyn/dynamo/internal/keys"
)

// TestFetchRangeHoldsWhatAFetchNeeds: the range a fetch reads holds the
// lock row, the instance record and the messages visible at its time, and
// no KV row, execution record, history row or message that becomes visible
// later, however far the times and keys go.
func TestFetchRangeHoldsWhatAFetchNeeds(t *testing.T) {
	const now = 1_700_000_000_000
	seq := keys.Num20(now*1000) + "a1b2c3d4e5f6"
	from, to := fetchRange(now)
	inside := func(sk string) bool { return sk >= from && sk < to }
	for _, sk := range []string{keys.Lock, keys.Meta, keys.MessageSK(now, seq), keys.MessageSK(0, seq), keys.MessageSK(-5, seq)} {
		if !inside(sk) {
			t.Errorf("%q is outside the fetch's range [%q, %q)", sk, from, to)
		}
	}
	long := string(make([]byte, 2000))
	for _, sk := range []string{
		keys.KVSK(""), keys.KVSK("~~~~"), keys.KVSK("\U0010FFFF"), keys.KVSK(long), keys.ExecSK(1), keys.ExecSK(^uint64(0)),
		keys.HistorySK(1, 1), keys.ChildSK("c"), keys.MessageSK(now+1, seq), keys.MessageSK(now+3_600_000, seq),
	} {
		if inside(sk) {
			t.Errorf("%q is inside the fetch's range [%q, %q)", sk, from, to)
		}
	}
}

// TestMessageKeysRoundTrip: a message's sort key gives back its time and
// queue sequence, and messages sort by time, then sequence.
func TestMessageKeysRoundTrip(t *testing.T) {
	a, b := keys.MessageSK(5, keys.Num20(9)+"x"), keys.MessageSK(6, keys.Num20(1)+"x")
	if a >= b {
		t.Errorf("%q sorts after %q; want the earlier time first", a, b)
	}
	vis, seq, err := keys.ParseMessageSK(a)
	if err != nil || vis != 5 || seq != keys.Num20(9)+"x" {
		t.Errorf("ParseMessageSK(%q) = %d, %q, %v", a, vis, seq, err)
	}
	for _, bad := range []string{"#Q#", "#Q#" + keys.Num20(1), "#Q#x#y", "#KV#k"} {
		if _, _, err := keys.ParseMessageSK(bad); err == nil {
			t.Errorf("ParseMessageSK(%q) succeeded; want an error", bad)
		}
	}
}
