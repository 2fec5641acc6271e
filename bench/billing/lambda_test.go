package billing_test

import (
	"testing"
	"time"

	"github.com/duradyn/duradyn/bench/billing"
)

func TestLambdaBilledDuration(t *testing.T) {
	for _, c := range []struct {
		ran, want time.Duration
	}{
		{0, 0},
		{-time.Millisecond, 0},
		{time.Nanosecond, time.Millisecond},
		{time.Millisecond, time.Millisecond},
		{time.Millisecond + time.Nanosecond, 2 * time.Millisecond},
		{27550 * time.Microsecond, 28 * time.Millisecond}, // AWS's example: 27.55 ms billed as 28 ms
		{30 * time.Second, 30 * time.Second},
	} {
		if got := billing.LambdaBilledDuration(c.ran); got != c.want {
			t.Errorf("LambdaBilledDuration(%v) = %v, want %v", c.ran, got, c.want)
		}
	}
}

func TestLambdaCost(t *testing.T) {
	var c billing.LambdaCost
	c.Add(999500 * time.Microsecond) // 1,000 ms billed
	c.Add(500*time.Millisecond + time.Microsecond)
	c.Add(1499 * time.Millisecond)
	if c.Invocations != 3 || c.Billed != 3*time.Second {
		t.Fatalf("%v, want 3 invocations and 3 s billed, each rounded up on its own", c)
	}
	// 3 s at 512 MB is 1.5 GB-s; at 128 MB, 0.375.
	if got := c.GBSeconds(512); !approxEqual(got, 1.5) {
		t.Errorf("GBSeconds(512) = %v, want 1.5", got)
	}
	if got := c.GBSeconds(128); !approxEqual(got, 0.375) {
		t.Errorf("GBSeconds(128) = %v, want 0.375", got)
	}
	want := 3*0.20/1e6 + 1.5*0.0000133334
	if got := c.Dollars(512); !approxEqual(got, want) {
		t.Errorf("Dollars(512) = %v, want %v", got, want)
	}
	// A million invocations of 100 ms at 256 MB: $0.20 in requests and
	// 25,000 GB-s, $0.333335 in duration.
	var m billing.LambdaCost
	for range 1000 {
		m.Add(100 * time.Millisecond)
	}
	if got, want := m.Dollars(256)*1000, 0.20+25000*0.0000133334; !approxEqual(got, want) {
		t.Errorf("a million 100 ms invocations at 256 MB cost $%v, want $%v", got, want)
	}
}
