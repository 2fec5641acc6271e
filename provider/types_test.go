package provider_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/duradyn/duradyn/provider"
)

func TestTagFilterConstructorsRejectBadSets(t *testing.T) {
	six := []string{"a", "b", "c", "d", "e", "f"}
	for name, build := range map[string]func(...string) (provider.TagFilter, error){
		"OnlyTags": provider.OnlyTags, "DefaultAndTags": provider.DefaultAndTags,
	} {
		if _, err := build(six...); !errors.Is(err, provider.ErrInvalidInput) {
			t.Errorf("%s with 6 tags: want ErrInvalidInput, got %v", name, err)
		}
		if _, err := build(); !errors.Is(err, provider.ErrInvalidInput) {
			t.Errorf("%s with no tags: want ErrInvalidInput, got %v", name, err)
		}
		if _, err := build(six[:5]...); err != nil {
			t.Errorf("%s with 5 tags: %v", name, err)
		}
		// Duplicates collapse, as in a set.
		f, err := build("a", "b", "c", "d", "e", "a")
		if err != nil {
			t.Errorf("%s with 5 distinct tags and a duplicate: %v", name, err)
		} else if len(f.Tags()) != 5 {
			t.Errorf("%s: want 5 tags, got %v", name, f.Tags())
		}
	}
}

func TestTagFilterMatches(t *testing.T) {
	gpu, io := ptr("gpu"), ptr("io")
	only, _ := provider.OnlyTags("gpu")
	defAnd, _ := provider.DefaultAndTags("gpu")
	cases := []struct {
		f                  provider.TagFilter
		untagged, gpu, io_ bool
	}{
		{provider.DefaultOnlyTags(), true, false, false},
		{provider.TagFilter{}, true, false, false},
		{only, false, true, false},
		{defAnd, true, true, false},
		{provider.AnyTag(), true, true, true},
		{provider.NoTags(), false, false, false},
	}
	for _, c := range cases {
		if c.f.Matches(nil) != c.untagged || c.f.Matches(gpu) != c.gpu || c.f.Matches(io) != c.io_ {
			t.Errorf("%v: got untagged=%v gpu=%v io=%v", c.f, c.f.Matches(nil), c.f.Matches(gpu), c.f.Matches(io))
		}
	}
}

func TestSemVer(t *testing.T) {
	v, err := provider.ParseSemVer("1.2.3-rc.1+build5")
	if err != nil || v != (provider.SemVer{Major: 1, Minor: 2, Patch: 3}) {
		t.Fatalf("ParseSemVer: %v, %v", v, err)
	}
	for _, bad := range []string{"", "1.2", "1.2.x", "01.2.3", "1.2.3.4", "-1.0.0"} {
		if _, err := provider.ParseSemVer(bad); !errors.Is(err, provider.ErrInvalidInput) {
			t.Errorf("ParseSemVer(%q): want ErrInvalidInput, got %v", bad, err)
		}
	}
	r := provider.SemverRange{Min: provider.SemVer{Major: 1}, Max: provider.SemVer{Major: 1, Minor: 9, Patch: 9}}
	for v, want := range map[provider.SemVer]bool{{Major: 1}: true, {Major: 1, Minor: 9, Patch: 9}: true, {Major: 1, Minor: 10}: false, {Minor: 99}: false} {
		if r.Contains(v) != want {
			t.Errorf("%v contains %v: want %v", r, v, want)
		}
	}
}

func TestCapabilityFilterAdmits(t *testing.T) {
	v1 := provider.SemverRange{Min: provider.SemVer{Major: 1}, Max: provider.SemVer{Major: 1, Minor: 99}}
	v2 := provider.SemverRange{Min: provider.SemVer{Major: 2}, Max: provider.SemVer{Major: 2, Minor: 99}}
	pin2 := &provider.SemVer{Major: 2}
	f := provider.CapabilityFilter{SupportedVersions: []provider.SemverRange{v1, v2}}
	if f.Admits(pin2) {
		t.Error("only the first range counts, yet a v2 pin was admitted")
	}
	if !f.IsCompatible(*pin2) {
		t.Error("IsCompatible consults every range")
	}
	if !f.Admits(nil) {
		t.Error("an unpinned execution is always admitted")
	}
	if (provider.CapabilityFilter{}).Admits(nil) {
		t.Error("an empty range list admits nothing")
	}
}

func TestErrorClassification(t *testing.T) {
	perm := provider.Permanent("ack_orchestration_item", provider.ErrInvalidLockToken, "Invalid lock token %q", "t")
	wrapped := fmt.Errorf("dispatch: %w", perm)
	if provider.IsRetryable(wrapped) {
		t.Error("permanent error reported retryable")
	}
	if !errors.Is(wrapped, provider.ErrInvalidLockToken) {
		t.Error("sentinel not reachable through the provider error")
	}
	var pe *provider.Error
	if !errors.As(wrapped, &pe) || pe.Op != "ack_orchestration_item" {
		t.Errorf("errors.As: %#v", pe)
	}
	if got := perm.Error(); got != `ack_orchestration_item: Invalid lock token "t"` {
		t.Errorf("Error() = %q", got)
	}
	if !provider.IsRetryable(provider.Retryable("fetch_work_item", nil, "throttled")) {
		t.Error("retryable error reported permanent")
	}
	if provider.IsRetryable(fmt.Errorf("x: %w", context.Canceled)) || provider.IsRetryable(nil) {
		t.Error("cancellation and nil are not retryable")
	}
	if !provider.IsRetryable(errors.New("unclassified")) {
		t.Error("unclassified errors are treated as retryable")
	}
	d := provider.ToInfrastructureDetails(wrapped)
	if d.Operation != "ack_orchestration_item" || d.Retryable {
		t.Errorf("ToInfrastructureDetails: %#v", d)
	}
}

func TestValidationRules(t *testing.T) {
	if err := provider.ValidateOrchestratorItem("enqueue_for_orchestrator", provider.ActivityExecuteItem{Instance: "i"}); !errors.Is(err, provider.ErrInvalidInput) || provider.IsRetryable(err) {
		t.Errorf("ActivityExecute on the orchestrator queue: %v", err)
	}
	if err := provider.ValidateCompletion("ack_work_item", provider.TimerFiredItem{Instance: "i"}); !errors.Is(err, provider.ErrInvalidInput) || provider.IsRetryable(err) {
		t.Errorf("non-completion: %v", err)
	}
	if err := provider.ValidateCompletion("ack_work_item", nil); err != nil {
		t.Errorf("nil completion is a drop: %v", err)
	}
	zero := provider.Event{EventID: 0, Kind: provider.OrchestrationCompleted{}}
	if err := provider.ValidateTurn("ack_orchestration_item", provider.TurnCommit{ExecutionID: 1, HistoryDelta: []provider.Event{zero}}); !errors.Is(err, provider.ErrInvalidInput) {
		t.Errorf("event id 0: %v", err)
	}
	dup := provider.Event{EventID: 2, Kind: provider.OrchestrationCompleted{}}
	if err := provider.ValidateEvents("append_with_execution", []provider.Event{dup, dup}); !errors.Is(err, provider.ErrInvalidInput) {
		t.Errorf("duplicate id in one batch: %v", err)
	}
}

func TestKVDeltaAndMerge(t *testing.T) {
	store := map[string]provider.KVEntry{"a": {Value: "1"}, "b": {Value: "2"}}
	var d provider.KVDelta
	d.Apply([]provider.Event{
		{EventID: 2, Kind: provider.KeyValueSet{Key: "a", Value: "10", LastUpdatedAtMs: 5}},
		{EventID: 3, Kind: provider.KeyValueCleared{Key: "b"}},
	})
	got := provider.MergeKV(store, d)
	if len(got) != 1 || got["a"].Value != "10" || got["a"].LastUpdatedAtMs != 5 {
		t.Fatalf("set + clear: %v", got)
	}
	d.Apply([]provider.Event{{EventID: 4, Kind: provider.KeyValuesCleared{}}, {EventID: 5, Kind: provider.KeyValueSet{Key: "c", Value: "3"}}})
	got = provider.MergeKV(store, d)
	if len(got) != 1 || got["c"].Value != "3" {
		t.Fatalf("clear all then set: %v", got)
	}
	if store["a"].Value != "1" || len(store) != 2 {
		t.Fatal("MergeKV modified the store")
	}
}

func TestCustomStatusChangeTakesLast(t *testing.T) {
	s, changed := provider.CustomStatusChange([]provider.Event{
		{EventID: 2, Kind: provider.CustomStatusUpdated{Status: ptr("a")}},
		{EventID: 3, Kind: provider.CustomStatusUpdated{}},
	})
	if !changed || s != nil {
		t.Fatalf("want cleared, got %v %v", s, changed)
	}
	if _, changed := provider.CustomStatusChange(nil); changed {
		t.Fatal("no events, yet changed")
	}
}
