package durable

import (
	"context"
	"fmt"
	"strings"

	"github.com/duradyn/duradyn/durable/internal/replay"
	"github.com/duradyn/duradyn/provider"
)

// DefaultVersion is the version of a definition registered without one.
const DefaultVersion = "1.0.0"

// SyscallPrefix starts the names of the built-in activities; user
// definitions may not use it.
const SyscallPrefix = "__duroxide_syscall:"

// Option adjusts a definition, a call or a start. Each function that takes
// options documents which apply; the others are ignored.
type Option func(*options)

type options struct {
	version    *string
	instanceID string
	tag        *string
	session    *string
	retry      *RetryPolicy
}

func applyOptions(opts []Option) options {
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// Version selects a version: of a definition being registered, of a
// sub-orchestration, detached start, continue-as-new or client start (the
// registry's policy decides when none is given).
func Version(v string) Option { return func(o *options) { o.version = &v } }

// WithInstanceID names the instance of a sub-orchestration (default: an id
// derived from the parent's) or of a detached start.
func WithInstanceID(id string) Option { return func(o *options) { o.instanceID = id } }

// WithTag routes an activity to workers that serve the tag.
func WithTag(tag string) Option { return func(o *options) { o.tag = &tag } }

// OnSession runs an activity on the worker that owns the session, together
// with the session's other activities.
func OnSession(id string) Option { return func(o *options) { o.session = &id } }

// WithRetry retries a failed activity by the policy; the attempts and the
// waits between them are recorded in history.
func WithRetry(p RetryPolicy) Option { return func(o *options) { o.retry = &p } }

// Definition is an activity or orchestration to register.
type Definition interface {
	definition() definition
}

type defKind int

const (
	activityDef defKind = iota + 1
	orchestrationDef
)

type definition struct {
	kind     defKind
	name     string
	version  string
	activity func(ctx context.Context, input string) (string, error)
	// untyped marks an activity registered with ActivityFunc, which takes
	// and returns wire payloads.
	untyped     bool
	orchestrate orchestrateFunc
}

// orchestrateFunc runs an orchestration's code for one run of a turn; reg
// is the registry the handler was resolved from.
type orchestrateFunc func(rc *replay.Context, reg *Registry, input string) (string, error)

// Activity is a typed activity definition: a plain Go function that runs on
// a worker, at least once, and whose result is recorded in history.
type Activity[In, Out any] struct {
	name string
	fn   func(ctx context.Context, in In) (Out, error)
}

// NewActivity defines the activity name run by fn.
func NewActivity[In, Out any](name string, fn func(ctx context.Context, in In) (Out, error)) Activity[In, Out] {
	return Activity[In, Out]{name: name, fn: fn}
}

// Name returns the activity's name.
func (a Activity[In, Out]) Name() string { return a.name }

func (a Activity[In, Out]) definition() definition {
	fn := a.fn
	return definition{kind: activityDef, name: a.name, activity: func(ctx context.Context, input string) (string, error) {
		in, err := decode[In](input)
		if err != nil {
			return "", err
		}
		out, err := fn(ctx, in)
		if err != nil {
			return "", err
		}
		return encode(out)
	}}
}

// Call schedules the activity. Options: [WithTag], [OnSession],
// [WithRetry].
func (a Activity[In, Out]) Call(ctx *OrchestrationContext, in In, opts ...Option) Future[Out] {
	return CallActivity[Out](ctx, a.name, in, opts...)
}

// Orchestration is a typed orchestration definition.
type Orchestration[In, Out any] struct {
	name    string
	version string
	fn      func(ctx *OrchestrationContext, in In) (Out, error)
}

// NewOrchestration defines the orchestration name run by fn. Options:
// [Version] (default "1.0.0").
func NewOrchestration[In, Out any](name string, fn func(ctx *OrchestrationContext, in In) (Out, error), opts ...Option) Orchestration[In, Out] {
	o := applyOptions(opts)
	v := DefaultVersion
	if o.version != nil {
		v = *o.version
	}
	return Orchestration[In, Out]{name: name, version: v, fn: fn}
}

// Name returns the orchestration's name.
func (o Orchestration[In, Out]) Name() string { return o.name }

// Version returns the orchestration's version.
func (o Orchestration[In, Out]) Version() string { return o.version }

func (o Orchestration[In, Out]) definition() definition {
	fn := o.fn
	return definition{kind: orchestrationDef, name: o.name, version: o.version, orchestrate: func(rc *replay.Context, reg *Registry, input string) (string, error) {
		ctx := newOrchestrationContext(rc)
		ctx.reg = reg
		in, err := decode[In](input)
		if err != nil {
			return "", fmt.Errorf("orchestration %s input: %w", o.name, err)
		}
		out, err := fn(ctx, in)
		if err != nil {
			return "", err
		}
		return encode(out)
	}}
}

// CallSub schedules the orchestration as a sub-orchestration of ctx's.
// Options: [WithInstanceID], [Version].
func (o Orchestration[In, Out]) CallSub(ctx *OrchestrationContext, in In, opts ...Option) Future[Out] {
	return CallSubOrchestration[Out](ctx, o.name, in, opts...)
}

// Start starts an instance of the orchestration. Options: [Version].
func (o Orchestration[In, Out]) Start(ctx context.Context, c *Client, instanceID string, in In, opts ...Option) error {
	return c.StartOrchestration(ctx, instanceID, o.name, in, opts...)
}

// OrchestrationFunc is an untyped orchestration: its input and output are
// wire payloads. Use it to register code under a name chosen at run time.
func OrchestrationFunc(name string, fn func(ctx *OrchestrationContext, input string) (string, error), opts ...Option) Definition {
	return NewOrchestration(name, func(ctx *OrchestrationContext, in Raw) (Raw, error) {
		out, err := fn(ctx, string(in))
		return Raw(out), err
	}, opts...)
}

// ActivityFunc is an untyped activity: its input and output are wire
// payloads, passed as they are. Call it with [CallActivity] of [Raw] and a
// Raw (or json.RawMessage) input: a typed call, which would hand it its
// input JSON-encoded and decode its result as JSON, fails with an
// [*UntypedActivityError] on a runtime whose registry holds it. Register
// an activity that typed callers call with [NewActivity].
func ActivityFunc(name string, fn func(ctx context.Context, input string) (string, error)) Definition {
	return untypedActivity{NewActivity(name, func(ctx context.Context, in Raw) (Raw, error) {
		out, err := fn(ctx, string(in))
		return Raw(out), err
	})}
}

// untypedActivity is the definition [ActivityFunc] returns.
type untypedActivity struct{ Activity[Raw, Raw] }

func (a untypedActivity) definition() definition {
	d := a.Activity.definition()
	d.untyped = true
	return d
}

func validateName(kind, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: %s with an empty name", ErrInvalidDefinition, kind)
	case strings.HasPrefix(name, SyscallPrefix):
		return fmt.Errorf("%w: %s name %q uses the reserved prefix %q", ErrInvalidDefinition, kind, name, SyscallPrefix)
	}
	return nil
}

func validateVersion(name, v string) (provider.SemVer, error) {
	sv, err := provider.ParseSemVer(v)
	if err != nil {
		return sv, fmt.Errorf("%w: orchestration %s version %q: %w", ErrInvalidDefinition, name, v, err)
	}
	return sv, nil
}
