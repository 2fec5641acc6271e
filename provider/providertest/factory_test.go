package providertest

import (
	"strings"
	"testing"
	"time"

	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/provider/memprovider"
)

func TestFactoryValidate(t *testing.T) {
	newProvider := func(t *testing.T) provider.Provider { return nil }
	hook := func(t *testing.T, p provider.Provider, instance string) {}
	count := func(t *testing.T, p provider.Provider, instance string) uint32 { return 0 }
	tests := []struct {
		name    string
		f       Factory
		wantErr string // "" when f is valid
	}{
		{"minimal", Factory{NewProvider: newProvider}, ""},
		{"every field", Factory{
			NewProvider: newProvider, LockTimeout: time.Second, ShortPollThreshold: 250 * time.Millisecond,
			CorruptHistory: hook, MaxAttemptCount: count, Convergence: 2 * time.Second, Lacks: []Capability{CapAdmin},
		}, ""},
		{"declared hooks", Factory{NewProvider: newProvider, Lacks: []Capability{CapCorruptHistory, CapMaxAttemptCount}}, ""},
		{"no NewProvider", Factory{}, "NewProvider is required"},
		{"threshold at the poll timeout", Factory{NewProvider: newProvider, ShortPollThreshold: longPollingPollTimeout}, "ShortPollThreshold 500ms is not below"},
		{"threshold above the poll timeout", Factory{NewProvider: newProvider, ShortPollThreshold: 2 * time.Second}, "could not fail"},
		{"threshold just below", Factory{NewProvider: newProvider, ShortPollThreshold: longPollingPollTimeout - time.Millisecond}, ""},
		{"negative convergence", Factory{NewProvider: newProvider, Convergence: -time.Second}, "Convergence is negative"},
		{"negative lock timeout", Factory{NewProvider: newProvider, LockTimeout: -time.Second}, "LockTimeout is negative"},
		{"unknown capability", Factory{NewProvider: newProvider, Lacks: []Capability{"Sessions"}}, `unknown capability "Sessions"`},
		{"hook declared missing", Factory{NewProvider: newProvider, CorruptHistory: hook, Lacks: []Capability{CapCorruptHistory}}, "CorruptHistory is set"},
		{"count declared missing", Factory{NewProvider: newProvider, MaxAttemptCount: count, Lacks: []Capability{CapMaxAttemptCount}}, "MaxAttemptCount is set"},
	}
	for _, tc := range tests {
		err := tc.f.validate()
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: unexpected error: %v", tc.name, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: got error %v, want one containing %q", tc.name, err, tc.wantErr)
		}
	}
}

func TestSpanWindows(t *testing.T) {
	start := time.Unix(1000, 0)
	sp := span{start: start, end: start.Add(30 * time.Millisecond)}
	const d = time.Second
	if got, want := sp.earliest(d), start.Add(d-clockTick); !got.Equal(want) {
		t.Errorf("earliest = %v, want %v (the start plus d, less a clock tick)", got, want)
	}
	if got, want := sp.latest(d), start.Add(30*time.Millisecond+d+clockTick); !got.Equal(want) {
		t.Errorf("latest = %v, want %v (the end plus d and a clock tick)", got, want)
	}
	for _, tc := range []struct {
		d, took, want time.Duration
	}{
		{time.Second, time.Millisecond, 750 * time.Millisecond},            // fast provider: three quarters in
		{time.Second, 100 * time.Millisecond, 700 * time.Millisecond},      // room for three such probes
		{time.Second, time.Second, 600 * time.Millisecond},                 // at most lateSlackCap before the end
		{500 * time.Millisecond, time.Second, 250 * time.Millisecond},      // at most half the window
		{5 * time.Second, time.Second, 3750 * time.Millisecond},            // never less than a quarter
		{500 * time.Millisecond, 0, 375 * time.Millisecond},                // nothing measured yet
		{3 * time.Second, 200 * time.Millisecond, 2250 * time.Millisecond}, // the quarter is more than the cap
	} {
		if got, want := sp.late(tc.d, tc.took), start.Add(tc.want); !got.Equal(want) {
			t.Errorf("late(%v, %v) = %v after the start, want %v", tc.d, tc.took, got.Sub(start), tc.want)
		}
	}
	if !sp.endsBefore(sp.end.Add(time.Nanosecond)) || sp.endsBefore(sp.end) {
		t.Error("endsBefore must hold strictly after the end only")
	}
}

func TestTriesRepeatsOnlyMissedScenarios(t *testing.T) {
	made := 0
	s := &suite{f: Factory{NewProvider: func(t *testing.T) provider.Provider {
		made++
		return memprovider.New()
	}}}
	runs := 0
	s.tries(t, func(p provider.Provider) string {
		runs++
		if runs < 3 {
			return "observation late"
		}
		return ""
	})
	if runs != 3 || made != 3 {
		t.Errorf("scenario ran %d times on %d providers, want 3 on 3 fresh ones", runs, made)
	}
}
