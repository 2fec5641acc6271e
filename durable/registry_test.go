package durable

import (
	"context"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/duradyn/duradyn/durable/internal/replay"
	"github.com/duradyn/duradyn/provider/memprovider"
)

// duroxide builds registries with builders (merge, builder_from,
// register_all) and lists them by name. duradyn composes definitions: a
// library exports its []Definition and an application passes them all to
// NewRegistry (or Add); Overlay is builder_from. The tests below port each
// duroxide test to that API.

// rgOrch is an orchestration answering "<name>: <input>" (duroxide's
// orch1..orch3 helpers, named by tag).
func rgOrch(name, tag string, opts ...Option) Definition {
	return OrchestrationFunc(name, func(_ *OrchestrationContext, in string) (string, error) {
		return tag + ": " + in, nil
	}, opts...)
}

// rgActivity is an activity answering "<tag>: <input>".
func rgActivity(name, tag string) Definition {
	return ActivityFunc(name, func(_ context.Context, in string) (string, error) { return tag + ": " + in, nil })
}

func rgNew(t *testing.T, defs ...Definition) *Registry {
	t.Helper()
	r, err := NewRegistry(defs...)
	if err != nil {
		t.Fatalf("NewRegistry: %v", err)
	}
	return r
}

// rgOrchNames lists the registered orchestration names, sorted.
func rgOrchNames(r *Registry) []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Sorted(maps.Keys(r.orchestrations))
}

func rgHasOrch(r *Registry, name string) bool { return len(r.OrchestrationVersions(name)) > 0 }

func rgHasActivity(r *Registry, name string) bool {
	_, ok := r.activity(name)
	return ok
}

// rgRunActivity runs the registered activity name on input.
func rgRunActivity(t *testing.T, r *Registry, name, input string) string {
	t.Helper()
	fn, ok := r.activity(name)
	if !ok {
		t.Fatalf("activity %s not registered", name)
	}
	out, err := fn(context.Background(), input)
	if err != nil {
		t.Fatalf("activity %s: %v", name, err)
	}
	return out
}

// rgResolve returns the version the registry resolves name to (with no
// version requested), or an error.
func rgResolve(r *Registry, name string) (string, error) {
	_, v, err := r.resolve(name, nil)
	return v, err
}

func rgWantNames(t *testing.T, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Fatalf("names %v; want %v", got, want)
	}
}

func rgWantInvalid(t *testing.T, err error, parts ...string) {
	t.Helper()
	if !errors.Is(err, ErrInvalidDefinition) {
		t.Fatalf("error %v; want ErrInvalidDefinition", err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not mention %q", err, p)
		}
	}
}

func rgWantUnregistered(t *testing.T, r *Registry, name string, version *string) {
	t.Helper()
	if h, v, err := r.resolve(name, version); !errors.Is(err, replay.ErrUnregistered) || h != nil || v != "" {
		t.Errorf("resolve(%s, %v) = %v, %q, %v; want unregistered", name, version, h != nil, v, err)
	}
}

// registryTests port duroxide's tests/registry_tests.rs, in its order.
var registryTests = []struct {
	name string
	run  func(t *testing.T)
}{
	{"test_orchestration_registry_merge", func(t *testing.T) {
		lib1 := []Definition{rgOrch("orch1", "orch1"), rgOrch("orch2", "orch2")}
		lib2 := []Definition{rgOrch("orch3", "orch3")}
		combined := rgNew(t, slices.Concat(lib1, lib2)...)
		rgWantNames(t, rgOrchNames(combined), "orch1", "orch2", "orch3")
	}},
	{"test_orchestration_registry_builder_from", func(t *testing.T) {
		base := rgNew(t, rgOrch("orch1", "orch1"), rgOrch("orch2", "orch2"))
		extended, err := base.Overlay(rgOrch("orch3", "orch3"))
		if err != nil {
			t.Fatal(err)
		}
		rgWantNames(t, rgOrchNames(extended), "orch1", "orch2", "orch3")
		rgWantNames(t, rgOrchNames(base), "orch1", "orch2")
	}},
	{"test_orchestration_registry_chained_register", func(t *testing.T) {
		r := rgNew(t)
		for _, n := range []string{"orch1", "orch2", "orch3"} {
			if err := r.Add(rgOrch(n, n)); err != nil {
				t.Fatal(err)
			}
		}
		rgWantNames(t, rgOrchNames(r), "orch1", "orch2", "orch3")
	}},
	{"test_orchestration_registry_merge_with_chained_register", func(t *testing.T) {
		lib1 := []Definition{rgOrch("orch1", "orch1")}
		combined := rgNew(t, lib1...)
		if err := combined.Add(rgOrch("orch2", "orch2"), rgOrch("orch3", "orch3")); err != nil {
			t.Fatal(err)
		}
		if n := len(rgOrchNames(combined)); n != 3 {
			t.Fatalf("%d orchestrations; want 3", n)
		}
	}},
	{"test_activity_registry_merge", func(t *testing.T) {
		lib1 := []Definition{rgActivity("activity1", "activity1"), rgActivity("activity2", "activity2")}
		lib2 := []Definition{rgActivity("activity3", "activity3")}
		combined := rgNew(t, slices.Concat(lib1, lib2)...)
		for _, n := range []string{"activity1", "activity2", "activity3"} {
			if got := rgRunActivity(t, combined, n, "x"); got != n+": x" {
				t.Errorf("%s answered %q", n, got)
			}
		}
	}},
	{"test_activity_registry_from_registry", func(t *testing.T) {
		base := rgNew(t, rgActivity("activity1", "activity1"), rgActivity("activity2", "activity2"))
		extended, err := base.Overlay(rgActivity("activity3", "activity3"))
		if err != nil {
			t.Fatal(err)
		}
		rgWantNames(t, extended.ActivityNames(), "activity1", "activity2", "activity3")
		rgWantNames(t, base.ActivityNames(), "activity1", "activity2")
		if rgHasActivity(base, "activity3") {
			t.Fatal("base gained activity3")
		}
	}},
	{"test_activity_registry_chained_register", func(t *testing.T) {
		r := rgNew(t)
		for _, n := range []string{"activity1", "activity2", "activity3"} {
			if err := r.Add(rgActivity(n, n)); err != nil {
				t.Fatal(err)
			}
		}
		rgWantNames(t, r.ActivityNames(), "activity1", "activity2", "activity3")
	}},
	{"test_activity_registry_merge_with_chained_register", func(t *testing.T) {
		combined := rgNew(t, rgActivity("activity1", "activity1"))
		if err := combined.Add(rgActivity("activity2", "activity2"), rgActivity("activity3", "activity3")); err != nil {
			t.Fatal(err)
		}
		rgWantNames(t, combined.ActivityNames(), "activity1", "activity2", "activity3")
	}},
	{"test_activity_registry_builder_detects_duplicates", func(t *testing.T) {
		_, err := NewRegistry(rgActivity("activity1", "activity1"), rgActivity("activity1", "activity2"))
		rgWantInvalid(t, err, "activity1", "registered twice")
		// The same holds for an orchestration version.
		_, err = NewRegistry(rgOrch("orch1", "orch1"), rgOrch("orch1", "orch2"))
		rgWantInvalid(t, err, "orch1", "1.0.0", "registered twice")
	}},
	{"test_activity_registry_merge_duplicate_errors", func(t *testing.T) {
		lib1 := []Definition{rgActivity("activity1", "activity1")}
		lib2 := []Definition{rgActivity("activity1", "activity2")}
		_, err := NewRegistry(slices.Concat(lib1, lib2)...)
		rgWantInvalid(t, err, "activity1", "registered twice")
		// Adding a library to a registry that has one of its names fails
		// and adds nothing.
		r := rgNew(t, lib1...)
		err = r.Add(rgActivity("activity9", "activity9"), lib2[0])
		rgWantInvalid(t, err, "activity1")
		if got := rgRunActivity(t, r, "activity1", "x"); got != "activity1: x" || rgHasActivity(r, "activity9") {
			t.Fatalf("after the failed Add: activity1 answers %q, activity9 registered %v", got, rgHasActivity(r, "activity9"))
		}
	}},
	{"test_reserved_prefix_rejected", func(t *testing.T) {
		_, err := NewRegistry(rgActivity("__duroxide_syscall:evil", "evil"))
		rgWantInvalid(t, err, "reserved prefix", SyscallPrefix)
		_, err = NewRegistry(rgOrch("__duroxide_syscall:evil", "evil"))
		rgWantInvalid(t, err, "reserved prefix", SyscallPrefix)
	}},
	{"test_builtins_exist_with_empty_registry", func(t *testing.T) {
		_, c, _ := utServe(t, OrchestrationFunc("TestBuiltins", func(ctx *OrchestrationContext, _ string) (string, error) {
			if _, err := ctx.NewGUID().Get(ctx); err != nil {
				return "", err
			}
			if _, err := ctx.UTCNow().Get(ctx); err != nil {
				return "", err
			}
			return "ok", nil
		}))
		if err := c.StartOrchestration(utCtx(t), "test-builtins", "TestBuiltins", Raw("")); err != nil {
			t.Fatal(err)
		}
		if out := utCompleted(t, c, "test-builtins"); out != "ok" {
			t.Fatalf("output %q", out)
		}
	}},
	{"test_user_cannot_override_builtins", func(t *testing.T) {
		_, err := NewRegistry(rgActivity("__duroxide_syscall:new_guid", ""))
		rgWantInvalid(t, err, "reserved prefix", SyscallPrefix)
	}},
	{"test_register_versioned_typed", func(t *testing.T) {
		type myInput struct {
			Value int `json:"value"`
		}
		type myOutput struct {
			Result int `json:"result"`
		}
		typed := NewOrchestration("typed-orch", func(_ *OrchestrationContext, in myInput) (myOutput, error) {
			return myOutput{Result: in.Value * 2}, nil
		}, Version("2.0.0"))
		r := rgNew(t, typed)
		if !slices.Contains(rgOrchNames(r), "typed-orch") {
			t.Fatalf("names %v", rgOrchNames(r))
		}
		if vs := r.OrchestrationVersions("typed-orch"); !slices.Equal(vs, []string{"2.0.0"}) {
			t.Fatalf("versions %v; want [2.0.0]", vs)
		}
		// And it runs with JSON payloads.
		p := memprovider.New()
		utStart(t, p, r, utQuick)
		c := NewClient(p)
		if err := typed.Start(utCtx(t), c, "typed-1", myInput{Value: 21}); err != nil {
			t.Fatal(err)
		}
		out, err := WaitForOutput[myOutput](utCtx(t), c, "typed-1")
		if err != nil || out.Result != 42 {
			t.Fatalf("output %+v, %v; want 42", out, err)
		}
	}},
	{"activity_context_metadata", func(t *testing.T) {
		type recorded struct {
			Instance, Name, OrchName, OrchVersion string
			ExecutionID                           uint64
		}
		var mu sync.Mutex
		var records []recorded
		_, c, rt := utServe(t,
			ActivityFunc("Inspect", func(ctx context.Context, _ string) (string, error) {
				info, ok := ActivityInfoFrom(ctx)
				if !ok {
					return "", errors.New("no activity info")
				}
				name, version, err := info.Orchestration(ctx)
				if err != nil {
					return "", err
				}
				mu.Lock()
				records = append(records, recorded{info.Instance, info.Name, name, version, info.ExecutionID})
				mu.Unlock()
				return "ok", nil
			}),
			OrchestrationFunc("InspectOrch", func(ctx *OrchestrationContext, _ string) (string, error) {
				out, err := CallActivity[Raw](ctx, "Inspect", Raw("payload")).Get(ctx)
				return string(out), err
			}),
		)
		if err := c.StartOrchestration(utCtx(t), "registry-test-instance", "InspectOrch", Raw("")); err != nil {
			t.Fatal(err)
		}
		if out := utCompleted(t, c, "registry-test-instance"); out != "ok" {
			t.Fatalf("output %q", out)
		}
		utShutdown(t, rt)
		mu.Lock()
		defer mu.Unlock()
		want := []recorded{{"registry-test-instance", "Inspect", "InspectOrch", "1.0.0", 1}}
		if !reflect.DeepEqual(records, want) {
			t.Fatalf("activity saw %+v; want %+v", records, want)
		}
	}},
	{"test_cross_crate_composition_pattern", func(t *testing.T) {
		azure := func() []Definition {
			return []Definition{
				rgOrch("duroxide-azure-arm::orchestration::provision-postgres", "orch1"),
				rgOrch("duroxide-azure-arm::orchestration::deploy-webapp", "orch2"),
			}
		}
		aws := func() []Definition {
			return []Definition{rgOrch("duroxide-aws-ec2::orchestration::create-vpc", "orch3")}
		}
		combined := rgNew(t, slices.Concat(azure(), aws())...)
		rgWantNames(t, rgOrchNames(combined),
			"duroxide-azure-arm::orchestration::provision-postgres",
			"duroxide-azure-arm::orchestration::deploy-webapp",
			"duroxide-aws-ec2::orchestration::create-vpc")
	}},
	{"test_orchestration_registry_list_names", func(t *testing.T) {
		r := rgNew(t, rgOrch("orch1", "orch1"), rgOrch("orch2", "orch2"))
		rgWantNames(t, rgOrchNames(r), "orch1", "orch2")
	}},
	{"test_orchestration_registry_has_and_count", func(t *testing.T) {
		r := rgNew(t, rgOrch("orch1", "orch1"), rgOrch("orch2", "orch2"))
		if !rgHasOrch(r, "orch1") || !rgHasOrch(r, "orch2") || rgHasOrch(r, "orch3") || len(rgOrchNames(r)) != 2 {
			t.Fatalf("names %v", rgOrchNames(r))
		}
	}},
	{"test_orchestration_registry_list_versions", func(t *testing.T) {
		r := rgNew(t, rgOrch("orch1", "orch1"), rgOrch("orch1", "orch2", Version("2.0.0")), rgOrch("orch1", "orch3", Version("3.0.0")))
		if vs := r.OrchestrationVersions("orch1"); !slices.Equal(vs, []string{"1.0.0", "2.0.0", "3.0.0"}) {
			t.Fatalf("versions %v", vs)
		}
		if vs := r.OrchestrationVersions("non-existent"); len(vs) != 0 {
			t.Fatalf("versions of an unknown orchestration %v", vs)
		}
	}},
	{"test_activity_registry_list_names", func(t *testing.T) {
		r := rgNew(t, rgActivity("activity1", "activity1"), rgActivity("activity2", "activity2"), rgActivity("activity3", "activity3"))
		rgWantNames(t, r.ActivityNames(), "activity1", "activity2", "activity3")
	}},
	{"test_activity_registry_has", func(t *testing.T) {
		r := rgNew(t, rgActivity("activity1", "activity1"), rgActivity("activity2", "activity2"))
		if !rgHasActivity(r, "activity1") || !rgHasActivity(r, "activity2") || rgHasActivity(r, "activity3") || rgHasActivity(r, "non-existent") {
			t.Fatalf("activities %v", r.ActivityNames())
		}
	}},
	{"test_activity_registry_count", func(t *testing.T) {
		if n := len(rgNew(t).ActivityNames()); n != 0 {
			t.Fatalf("empty registry has %d activities", n)
		}
		r := rgNew(t, rgActivity("activity1", "activity1"), rgActivity("activity2", "activity2"), rgActivity("activity3", "activity3"))
		if n := len(r.ActivityNames()); n != 3 {
			t.Fatalf("%d activities; want 3", n)
		}
	}},
	{"test_activity_registry_introspection_after_merge", func(t *testing.T) {
		lib1 := []Definition{rgActivity("lib1::activity1", "activity1"), rgActivity("lib1::activity2", "activity2")}
		lib2 := []Definition{rgActivity("lib2::activity3", "activity3")}
		combined := rgNew(t, slices.Concat(lib1, lib2)...)
		rgWantNames(t, combined.ActivityNames(), "lib1::activity1", "lib1::activity2", "lib2::activity3")
		if !rgHasActivity(combined, "lib1::activity1") || !rgHasActivity(combined, "lib2::activity3") || rgHasActivity(combined, "non-existent") {
			t.Fatal("has")
		}
		if n := len(combined.ActivityNames()); n != 3 {
			t.Fatalf("%d activities", n)
		}
	}},
	{"test_registry_default", func(t *testing.T) {
		// Go has no Default: NewRegistry() with no definition is the empty
		// registry.
		r := rgNew(t)
		if len(rgOrchNames(r)) != 0 || len(r.ActivityNames()) != 0 {
			t.Fatalf("empty registry lists %v, %v", rgOrchNames(r), r.ActivityNames())
		}
		v := "1.0.0"
		rgWantUnregistered(t, r, "nonexistent", nil)
		rgWantUnregistered(t, r, "nonexistent", &v)
		if vs := r.OrchestrationVersions("nonexistent"); len(vs) != 0 {
			t.Fatalf("versions %v", vs)
		}
	}},
	{"test_registry_clone_shares_policy", func(t *testing.T) {
		// A Go registry is shared by pointer, so every holder sees a
		// policy change, as duroxide's clones do. Overlay (builder_from)
		// copies the policies instead: changes after the copy stay apart.
		reg1 := rgNew(t, rgOrch("orch1", "orch1"), rgOrch("orch1", "orch2", Version("2.0.0")))
		reg2 := reg1
		reg2.SetVersionPolicy("orch1", Exact("1.0.0"))
		for _, r := range []*Registry{reg1, reg2} {
			if v, err := rgResolve(r, "orch1"); err != nil || v != "1.0.0" {
				t.Fatalf("resolve = %q, %v; want 1.0.0", v, err)
			}
		}
		copied, err := reg1.Overlay()
		if err != nil {
			t.Fatal(err)
		}
		if v, err := rgResolve(copied, "orch1"); err != nil || v != "1.0.0" {
			t.Fatalf("overlay resolves %q, %v; want the copied policy's 1.0.0", v, err)
		}
		copied.SetVersionPolicy("orch1", Latest())
		if v, _ := rgResolve(copied, "orch1"); v != "2.0.0" {
			t.Fatalf("overlay with Latest resolves %q", v)
		}
		if v, _ := rgResolve(reg1, "orch1"); v != "1.0.0" {
			t.Fatalf("original resolves %q after the overlay's change; want 1.0.0", v)
		}
	}},
	{"test_empty_registry_resolution", func(t *testing.T) {
		r := rgNew(t)
		v := "1.0.0"
		rgWantUnregistered(t, r, "nonexistent", nil)
		rgWantUnregistered(t, r, "nonexistent", &v)
		if len(r.OrchestrationVersions("nonexistent")) != 0 || rgHasOrch(r, "nonexistent") {
			t.Fatal("empty registry knows nonexistent")
		}
	}},
	{"test_resolve_handler_exact_policy_missing_version", func(t *testing.T) {
		r := rgNew(t, rgOrch("orch1", "orch1"))
		r.SetVersionPolicy("orch1", Exact("2.0.0"))
		rgWantUnregistered(t, r, "orch1", nil)
	}},
	{"test_resolve_version_latest", func(t *testing.T) {
		r := rgNew(t, rgOrch("orch1", "orch1"), rgOrch("orch1", "orch2", Version("2.0.0")))
		if v, err := rgResolve(r, "orch1"); err != nil || v != "2.0.0" {
			t.Fatalf("resolve = %q, %v; want 2.0.0", v, err)
		}
	}},
	{"test_resolve_version_exact", func(t *testing.T) {
		r := rgNew(t, rgOrch("orch1", "orch1"), rgOrch("orch1", "orch2", Version("2.0.0")))
		r.SetVersionPolicy("orch1", Exact("1.0.0"))
		if v, err := rgResolve(r, "orch1"); err != nil || v != "1.0.0" {
			t.Fatalf("resolve = %q, %v; want 1.0.0", v, err)
		}
		// A requested version overrides the policy.
		two := "2.0.0"
		if _, v, err := r.resolve("orch1", &two); err != nil || v != "2.0.0" {
			t.Fatalf("resolve(2.0.0) = %q, %v", v, err)
		}
	}},
	{"test_activity_always_1_0_0_and_latest", func(t *testing.T) {
		// duradyn activities carry no version (duroxide lists 1.0.0 and
		// resolves Latest): the name alone resolves, and activities do not
		// appear among orchestration versions.
		r := rgNew(t, rgActivity("activity1", "activity1"))
		if got := rgRunActivity(t, r, "activity1", "x"); got != "activity1: x" {
			t.Fatalf("activity1 answered %q", got)
		}
		if vs := r.OrchestrationVersions("activity1"); len(vs) != 0 {
			t.Fatalf("activity has orchestration versions %v", vs)
		}
	}},
	{"test_activity_register_typed", func(t *testing.T) {
		type input struct {
			Value int `json:"value"`
		}
		type output struct {
			Result int `json:"result"`
		}
		r := rgNew(t, NewActivity("typed-activity", func(_ context.Context, in input) (output, error) {
			return output{Result: in.Value * 2}, nil
		}))
		if !rgHasActivity(r, "typed-activity") {
			t.Fatal("typed-activity not registered")
		}
		if got := rgRunActivity(t, r, "typed-activity", `{"value":21}`); got != `{"result":42}` {
			t.Fatalf("typed activity answered %s", got)
		}
	}},
	{"test_register_all", func(t *testing.T) {
		handler := func(_ *OrchestrationContext, in string) (string, error) { return "processed: " + in, nil }
		var defs []Definition
		for _, n := range []string{"orch1", "orch2", "orch3"} {
			defs = append(defs, OrchestrationFunc(n, handler))
		}
		r := rgNew(t, defs...)
		if len(rgOrchNames(r)) != 3 || !rgHasOrch(r, "orch1") || !rgHasOrch(r, "orch2") || !rgHasOrch(r, "orch3") {
			t.Fatalf("names %v", rgOrchNames(r))
		}
	}},
	{"test_list_versions_ordering", func(t *testing.T) {
		// Registered out of order; listed in semver order (3.0.0 would
		// sort before 10.0.0 as a string, not as a version).
		r := rgNew(t, rgOrch("orch1", "orch3", Version("10.0.0")), rgOrch("orch1", "orch1"),
			rgOrch("orch1", "orch2", Version("2.0.0")), rgOrch("orch1", "orch3", Version("3.0.0")))
		if vs := r.OrchestrationVersions("orch1"); !slices.Equal(vs, []string{"1.0.0", "2.0.0", "3.0.0", "10.0.0"}) {
			t.Fatalf("versions %v", vs)
		}
		if v, _ := rgResolve(r, "orch1"); v != "10.0.0" {
			t.Fatalf("latest %q; want 10.0.0", v)
		}
	}},
	{"test_multiple_policies", func(t *testing.T) {
		r := rgNew(t,
			rgOrch("orch1", "orch1"), rgOrch("orch1", "orch2", Version("2.0.0")),
			rgOrch("orch2", "orch3"), rgOrch("orch2", "orch1", Version("2.0.0")))
		r.SetVersionPolicy("orch1", Exact("1.0.0"))
		r.SetVersionPolicy("orch2", Latest())
		if v, err := rgResolve(r, "orch1"); err != nil || v != "1.0.0" {
			t.Fatalf("orch1 resolves %q, %v", v, err)
		}
		if v, err := rgResolve(r, "orch2"); err != nil || v != "2.0.0" {
			t.Fatalf("orch2 resolves %q, %v", v, err)
		}
	}},
}

// TestRegistry runs the ported registry tests, then duradyn's own checks
// of what NewRegistry refuses.
func TestRegistry(t *testing.T) {
	if len(registryTests) != 34 {
		t.Fatalf("%d registry tests; registry_tests.rs has 34", len(registryTests))
	}
	for _, tc := range registryTests {
		t.Run(tc.name, tc.run)
	}
	// duradyn's own: empty names, malformed versions and nil definitions
	// are refused, and a refused Add changes nothing.
	t.Run("empty_names_rejected", func(t *testing.T) {
		_, err := NewRegistry(rgActivity("", "x"))
		rgWantInvalid(t, err, "empty name")
		_, err = NewRegistry(rgOrch("", "x"))
		rgWantInvalid(t, err, "empty name")
	})
	t.Run("malformed_version_rejected", func(t *testing.T) {
		_, err := NewRegistry(rgOrch("orch1", "x", Version("two")))
		rgWantInvalid(t, err, "orch1", "two")
	})
	t.Run("nil_definition_rejected", func(t *testing.T) {
		_, err := NewRegistry(nil)
		rgWantInvalid(t, err, "nil definition")
	})
	t.Run("refused_add_changes_nothing", func(t *testing.T) {
		r := rgNew(t, rgOrch("orch1", "orch1"))
		err := r.Add(rgOrch("orch1", "orch2", Version("2.0.0")), rgOrch("__duroxide_syscall:x", "x"))
		rgWantInvalid(t, err, "reserved prefix")
		if vs := r.OrchestrationVersions("orch1"); !slices.Equal(vs, []string{"1.0.0"}) {
			t.Fatalf("versions %v after a refused Add", vs)
		}
	})
	t.Run("exact_policy_with_malformed_version_unregistered", func(t *testing.T) {
		r := rgNew(t, rgOrch("orch1", "orch1"))
		r.SetVersionPolicy("orch1", Exact("not-a-version"))
		rgWantUnregistered(t, r, "orch1", nil)
	})
}
