package durable

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/duradyn/duradyn/durable/internal/replay"
	"github.com/duradyn/duradyn/provider"
)

// VersionPolicy decides which registered version of an orchestration a new
// instance (or sub-orchestration, or continue-as-new) runs when the caller
// names none.
type VersionPolicy struct {
	exact string
}

// Latest selects the highest registered version: the default.
func Latest() VersionPolicy { return VersionPolicy{} }

// Exact selects one version.
func Exact(version string) VersionPolicy { return VersionPolicy{exact: version} }

type orchestrationVersion struct {
	version provider.SemVer
	handler orchestrateFunc
}

// Registry holds the activities and orchestrations a runtime serves. It is
// safe for concurrent use; definitions added while a runtime runs are
// served from the next fetch on.
type Registry struct {
	mu             sync.RWMutex
	activities     map[string]func(context.Context, string) (string, error)
	untyped        map[string]bool                   // activities registered with ActivityFunc
	orchestrations map[string][]orchestrationVersion // sorted by version
	policies       map[string]VersionPolicy
}

// NewRegistry returns a registry holding defs.
func NewRegistry(defs ...Definition) (*Registry, error) {
	r := &Registry{
		activities:     map[string]func(context.Context, string) (string, error){},
		untyped:        map[string]bool{},
		orchestrations: map[string][]orchestrationVersion{},
		policies:       map[string]VersionPolicy{},
	}
	if err := r.Add(defs...); err != nil {
		return nil, err
	}
	return r, nil
}

// Add registers defs. A duplicate activity name or orchestration
// (name, version), an empty name, a reserved name or a malformed version is
// an error wrapping [ErrInvalidDefinition], and nothing is added.
func (r *Registry) Add(defs ...Definition) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	staged := make([]definition, 0, len(defs))
	seen := map[string]bool{}
	for _, d := range defs {
		if d == nil {
			return fmt.Errorf("%w: nil definition", ErrInvalidDefinition)
		}
		def := d.definition()
		key := fmt.Sprint(def.kind, "/", def.name, "@", def.version)
		switch def.kind {
		case activityDef:
			if err := validateName("activity", def.name); err != nil {
				return err
			}
			if _, dup := r.activities[def.name]; dup || seen[key] {
				return fmt.Errorf("%w: activity %q registered twice", ErrInvalidDefinition, def.name)
			}
		case orchestrationDef:
			if err := validateName("orchestration", def.name); err != nil {
				return err
			}
			v, err := validateVersion(def.name, def.version)
			if err != nil {
				return err
			}
			if seen[key] || slices.ContainsFunc(r.orchestrations[def.name], func(o orchestrationVersion) bool { return o.version == v }) {
				return fmt.Errorf("%w: orchestration %q version %s registered twice", ErrInvalidDefinition, def.name, def.version)
			}
		}
		seen[key] = true
		staged = append(staged, def)
	}
	for _, def := range staged {
		if def.kind == activityDef {
			r.activities[def.name] = def.activity
			if def.untyped {
				r.untyped[def.name] = true
			}
			continue
		}
		v, _ := provider.ParseSemVer(def.version)
		vs := append(r.orchestrations[def.name], orchestrationVersion{version: v, handler: def.orchestrate})
		slices.SortFunc(vs, func(a, b orchestrationVersion) int { return a.version.Compare(b.version) })
		r.orchestrations[def.name] = vs
	}
	return nil
}

// SetVersionPolicy sets the policy for orchestration name.
func (r *Registry) SetVersionPolicy(name string, p VersionPolicy) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.policies[name] = p
}

// activity returns the activity registered under name.
func (r *Registry) activity(name string) (func(context.Context, string) (string, error), bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	fn, ok := r.activities[name]
	return fn, ok
}

// isUntyped reports whether activity name was registered with
// ActivityFunc.
func (r *Registry) isUntyped(name string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.untyped[name]
}

// resolve finds the handler of orchestration name: the exact version when
// one is given, else the one the policy selects. The handler's code sees r
// as its registry.
func (r *Registry) resolve(name string, version *string) (replay.Handler, string, error) {
	fn, v, err := r.lookup(name, version)
	if err != nil {
		return nil, "", err
	}
	return func(rc *replay.Context, input string) (string, error) { return fn(rc, r, input) }, v, nil
}

// lookup finds the code of orchestration name for [Registry.resolve].
func (r *Registry) lookup(name string, version *string) (orchestrateFunc, string, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	vs := r.orchestrations[name]
	want := ""
	if version != nil {
		want = *version
	} else if p, ok := r.policies[name]; ok && p.exact != "" {
		want = p.exact
	}
	if want == "" {
		if len(vs) == 0 {
			return nil, "", fmt.Errorf("%w: %s", replay.ErrUnregistered, name)
		}
		last := vs[len(vs)-1]
		return last.handler, last.version.String(), nil
	}
	sv, err := provider.ParseSemVer(want)
	if err == nil {
		for _, o := range vs {
			if o.version == sv {
				return o.handler, want, nil
			}
		}
	}
	return nil, "", fmt.Errorf("%w: %s version %s", replay.ErrUnregistered, name, want)
}

// ActivityNames returns the registered activity names, sorted.
func (r *Registry) ActivityNames() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.activities))
	for n := range r.activities {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// OrchestrationVersions returns the registered versions of orchestration
// name, lowest first.
func (r *Registry) OrchestrationVersions(name string) []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.orchestrations[name]))
	for _, o := range r.orchestrations[name] {
		out = append(out, o.version.String())
	}
	return out
}

// Overlay returns a copy of r with defs added, each replacing the
// registration of the same activity name or orchestration (name, version)
// if there is one; version policies are copied. r is unchanged. Test
// harnesses use it to swap activities for mocks.
func (r *Registry) Overlay(defs ...Definition) (*Registry, error) {
	r.mu.RLock()
	out := &Registry{
		activities:     maps.Clone(r.activities),
		untyped:        maps.Clone(r.untyped),
		orchestrations: map[string][]orchestrationVersion{},
		policies:       maps.Clone(r.policies),
	}
	for name, vs := range r.orchestrations {
		out.orchestrations[name] = slices.Clone(vs)
	}
	r.mu.RUnlock()
	for _, d := range defs {
		if d == nil {
			return nil, fmt.Errorf("%w: nil definition", ErrInvalidDefinition)
		}
		def := d.definition()
		switch def.kind {
		case activityDef:
			delete(out.activities, def.name)
			delete(out.untyped, def.name)
		case orchestrationDef:
			if v, err := provider.ParseSemVer(def.version); err == nil {
				out.orchestrations[def.name] = slices.DeleteFunc(out.orchestrations[def.name], func(o orchestrationVersion) bool { return o.version == v })
			}
		}
	}
	if err := out.Add(defs...); err != nil {
		return nil, err
	}
	return out, nil
}

// ReplayResolver returns the registry's orchestration lookup in the form
// the replay engine takes. It exists for package durabletest, which replays
// recorded histories against a registry; other code has no use for it.
func (r *Registry) ReplayResolver() replay.Resolver { return r.resolve }
