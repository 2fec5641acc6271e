package durable

import (
	"errors"
	"fmt"

	"github.com/duradyn/duradyn/durable/internal/replay"
)

// Awaitable is a future of any type, for sets of futures of different
// types ([Race], [WaitAny], [WaitAll]).
type Awaitable interface {
	// Done reports whether the future has resolved or was cancelled.
	Done() bool
	// Cancel cancels the future if it has not resolved: an activity is
	// cancelled on its worker, a sub-orchestration is sent a cancellation, a
	// wait or dequeue stops receiving (a queued message stays for the next
	// Dequeue), a timer is forgotten, a Go branch cancels what it started.
	// Get on a cancelled future returns ErrCancelled.
	Cancel()

	raw() *replay.Future
}

// Future is the result of a durable call: an activity, timer, event,
// sub-orchestration or Go branch.
type Future[T any] interface {
	Awaitable
	// Get blocks the orchestration until the future resolves and returns
	// its value. A failed activity or sub-orchestration returns a
	// [*TaskError]; a cancelled future [ErrCancelled].
	Get(ctx *OrchestrationContext) (T, error)
}

type future[T any] struct {
	f      *replay.Future
	ctx    *OrchestrationContext
	result func(f *replay.Future) (T, error)
}

func (f *future[T]) Done() bool          { return f.f.Done() }
func (f *future[T]) Cancel()             { f.ctx.rc.Cancel(f.f) }
func (f *future[T]) raw() *replay.Future { return f.f }

func (f *future[T]) Get(ctx *OrchestrationContext) (T, error) {
	ctx.rc.Await(f.f)
	return f.result(f.f)
}

// wireFuture decodes a wire result; failures become TaskErrors.
func wireFuture[T any](ctx *OrchestrationContext, f *replay.Future, kind, name string) Future[T] {
	return &future[T]{f: f, ctx: ctx, result: func(f *replay.Future) (T, error) {
		var zero T
		res, failure, err := f.Result()
		if err != nil {
			return zero, err
		}
		if failure != nil {
			return zero, &TaskError{Kind: kind, Name: name, Details: failure}
		}
		return decode[T](res)
	}}
}

// failedFuture is a future that already failed with err.
func failedFuture[T any](ctx *OrchestrationContext, err error) Future[T] {
	f := replay.Resolved(nil, err)
	return &future[T]{f: f, ctx: ctx, result: func(*replay.Future) (T, error) {
		var zero T
		return zero, err
	}}
}

// Map returns a future that resolves with fn applied to f's value. It is f
// for Race and Cancel: cancelling it cancels f.
func Map[T, U any](f Future[T], fn func(T) (U, error)) Future[U] {
	inner := f
	return &mapped[T, U]{inner: inner, fn: fn}
}

type mapped[T, U any] struct {
	inner Future[T]
	fn    func(T) (U, error)
}

func (m *mapped[T, U]) Done() bool          { return m.inner.Done() }
func (m *mapped[T, U]) Cancel()             { m.inner.Cancel() }
func (m *mapped[T, U]) raw() *replay.Future { return m.inner.raw() }

func (m *mapped[T, U]) Get(ctx *OrchestrationContext) (U, error) {
	v, err := m.inner.Get(ctx)
	if err != nil {
		var zero U
		return zero, err
	}
	return m.fn(v)
}

// Go runs fn as a concurrent branch of the orchestration: a coroutine that
// runs whenever the code before it blocks, in a deterministic order. The
// future resolves with fn's result.
func Go[T any](ctx *OrchestrationContext, fn func(ctx *OrchestrationContext) (T, error)) Future[T] {
	f := ctx.rc.Go(func() (any, error) { return fn(ctx) })
	return &future[T]{f: f, ctx: ctx, result: func(f *replay.Future) (T, error) {
		v, err := f.Value()
		t, _ := v.(T)
		return t, err
	}}
}

func raws(fs []Awaitable) []*replay.Future {
	out := make([]*replay.Future, len(fs))
	for i, f := range fs {
		out[i] = f.raw()
	}
	return out
}

// WaitAny blocks until one of fs is done and returns the index of the first
// done, in argument order. It cancels nothing. It returns -1 for no futures.
func WaitAny(ctx *OrchestrationContext, fs ...Awaitable) int {
	if len(fs) == 0 {
		return -1
	}
	ctx.rc.AwaitAny(raws(fs))
	for i, f := range fs {
		if f.Done() {
			return i
		}
	}
	return -1
}

// Race is WaitAny that then cancels every other future: the loser of an
// activity race is cancelled on its worker.
func Race(ctx *OrchestrationContext, fs ...Awaitable) int {
	winner := WaitAny(ctx, fs...)
	for i, f := range fs {
		if i != winner {
			f.Cancel()
		}
	}
	return winner
}

// WaitAll blocks until every future is done.
func WaitAll(ctx *OrchestrationContext, fs ...Awaitable) {
	for _, f := range fs {
		ctx.rc.Await(f.raw())
	}
}

// AwaitAll waits for every future and returns their values in order. If any
// failed, the error joins each failure, prefixed with its index.
func AwaitAll[T any](ctx *OrchestrationContext, fs ...Future[T]) ([]T, error) {
	out := make([]T, len(fs))
	var errs []error
	for i, f := range fs {
		v, err := f.Get(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("[%d]: %w", i, err))
			continue
		}
		out[i] = v
	}
	return out, errors.Join(errs...)
}
