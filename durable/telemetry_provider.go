package durable

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/duradyn/duradyn/internal/instrument"
	"github.com/duradyn/duradyn/provider"
)

// traceProvider wraps p so that every call the runtime makes through it
// is a span, a child of the span in the call's context (a turn's or an
// activity's). The wrapper offers [provider.Admin] exactly when p does,
// and forwards [provider.Describer] and the layout check.
func traceProvider(p provider.Provider, tracer trace.Tracer) provider.Provider {
	t := &tracedProvider{p: p, tracer: tracer, name: provider.NameOf(p)}
	if admin, ok := provider.AdminOf(p); ok {
		return &tracedAdminProvider{tracedProvider: t, admin: admin}
	}
	return t
}

// tracedProvider is a provider whose calls are spans named "provider
// <Method>", with attributes durable.provider.name and
// durable.provider.operation (and durable.instance.id when the call names
// one). A fetch is recorded only when it returns work, in the trace of the
// instance it returns; empty polls and failed fetches are not spans (the
// metric durable.fetch.duration counts them).
type tracedProvider struct {
	p      provider.Provider
	tracer trace.Tracer
	name   string
}

// tracedAdminProvider adds the management calls of a provider that has
// them.
type tracedAdminProvider struct {
	*tracedProvider
	admin provider.Admin
}

var (
	_ provider.Provider  = (*tracedProvider)(nil)
	_ provider.Describer = (*tracedProvider)(nil)
	_ layoutChecker      = (*tracedProvider)(nil)
	_ provider.Admin     = (*tracedAdminProvider)(nil)
)

func (t *tracedProvider) start(ctx context.Context, op string, instance ...string) (context.Context, trace.Span) {
	attrs := make([]attribute.KeyValue, 0, 3)
	attrs = append(attrs, attrProviderName.String(t.name), attrProviderOperation.String(op))
	if len(instance) > 0 {
		attrs = append(attrs, attrInstanceID.String(instance[0]))
	}
	return t.tracer.Start(ctx, "provider "+op, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
}

// endSpan ends a provider call's span, marking it failed when err is set.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		span.SetAttributes(instrument.ErrorTypeKey.String(instrument.ErrorType(err)))
	}
	span.End()
}

// Name returns the wrapped provider's name.
func (t *tracedProvider) Name() string { return provider.NameOf(t.p) }

// Version returns the wrapped provider's version.
func (t *tracedProvider) Version() string { return provider.VersionOf(t.p) }

// CheckLayout runs the wrapped provider's layout check, if it has one.
func (t *tracedProvider) CheckLayout(ctx context.Context) error {
	lc, ok := t.p.(layoutChecker)
	if !ok {
		return nil
	}
	ctx, span := t.start(ctx, "CheckLayout")
	err := lc.CheckLayout(ctx)
	endSpan(span, err)
	return err
}

// fetchSpan records a fetch that returned work as a span in the trace of
// instance, from began to now.
func (t *tracedProvider) fetchSpan(ctx context.Context, op, instance string, began time.Time) {
	_, span := t.tracer.Start(inOrchestration(ctx, instance), "provider "+op,
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithTimestamp(began),
		trace.WithAttributes(attrProviderName.String(t.name), attrProviderOperation.String(op), attrInstanceID.String(instance)))
	span.End()
}

func (t *tracedProvider) FetchOrchestrationItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, filter *provider.CapabilityFilter) (*provider.OrchestrationItem, error) {
	began := time.Now()
	item, err := t.p.FetchOrchestrationItem(ctx, lockTimeout, pollTimeout, filter)
	if item != nil {
		t.fetchSpan(ctx, "FetchOrchestrationItem", item.Instance, began)
	}
	return item, err
}

func (t *tracedProvider) FetchWorkItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, session *provider.SessionFetchConfig, tags provider.TagFilter) (*provider.LockedWorkItem, error) {
	began := time.Now()
	item, err := t.p.FetchWorkItem(ctx, lockTimeout, pollTimeout, session, tags)
	if item != nil {
		t.fetchSpan(ctx, "FetchWorkItem", item.Item.Instance, began)
	}
	return item, err
}

func (t *tracedProvider) AckOrchestrationItem(ctx context.Context, lockToken string, commit provider.TurnCommit) error {
	ctx, span := t.start(ctx, "AckOrchestrationItem")
	err := t.p.AckOrchestrationItem(ctx, lockToken, commit)
	endSpan(span, err)
	return err
}

func (t *tracedProvider) AbandonOrchestrationItem(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool) error {
	ctx, span := t.start(ctx, "AbandonOrchestrationItem")
	err := t.p.AbandonOrchestrationItem(ctx, lockToken, delay, ignoreAttempt)
	endSpan(span, err)
	return err
}

func (t *tracedProvider) RenewOrchestrationItemLock(ctx context.Context, lockToken string, extendFor time.Duration) error {
	ctx, span := t.start(ctx, "RenewOrchestrationItemLock")
	err := t.p.RenewOrchestrationItemLock(ctx, lockToken, extendFor)
	endSpan(span, err)
	return err
}

func (t *tracedProvider) Read(ctx context.Context, instance string) ([]provider.Event, error) {
	ctx, span := t.start(ctx, "Read", instance)
	r0, err := t.p.Read(ctx, instance)
	endSpan(span, err)
	return r0, err
}

func (t *tracedProvider) ReadWithExecution(ctx context.Context, instance string, executionID uint64) ([]provider.Event, error) {
	ctx, span := t.start(ctx, "ReadWithExecution", instance)
	r0, err := t.p.ReadWithExecution(ctx, instance, executionID)
	endSpan(span, err)
	return r0, err
}

func (t *tracedProvider) AppendWithExecution(ctx context.Context, instance string, executionID uint64, events []provider.Event) error {
	ctx, span := t.start(ctx, "AppendWithExecution", instance)
	err := t.p.AppendWithExecution(ctx, instance, executionID, events)
	endSpan(span, err)
	return err
}

func (t *tracedProvider) EnqueueForWorker(ctx context.Context, item provider.ActivityExecuteItem) error {
	ctx, span := t.start(ctx, "EnqueueForWorker", item.Instance)
	err := t.p.EnqueueForWorker(ctx, item)
	endSpan(span, err)
	return err
}

func (t *tracedProvider) AckWorkItem(ctx context.Context, lockToken string, completion provider.WorkItem) error {
	ctx, span := t.start(ctx, "AckWorkItem")
	err := t.p.AckWorkItem(ctx, lockToken, completion)
	endSpan(span, err)
	return err
}

func (t *tracedProvider) RenewWorkItemLock(ctx context.Context, lockToken string, extendFor time.Duration) error {
	ctx, span := t.start(ctx, "RenewWorkItemLock")
	err := t.p.RenewWorkItemLock(ctx, lockToken, extendFor)
	endSpan(span, err)
	return err
}

func (t *tracedProvider) AbandonWorkItem(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool) error {
	ctx, span := t.start(ctx, "AbandonWorkItem")
	err := t.p.AbandonWorkItem(ctx, lockToken, delay, ignoreAttempt)
	endSpan(span, err)
	return err
}

func (t *tracedProvider) RenewSessionLock(ctx context.Context, ownerIDs []string, extendFor time.Duration, idleTimeout time.Duration) (int, error) {
	ctx, span := t.start(ctx, "RenewSessionLock")
	r0, err := t.p.RenewSessionLock(ctx, ownerIDs, extendFor, idleTimeout)
	endSpan(span, err)
	return r0, err
}

func (t *tracedProvider) CleanupOrphanedSessions(ctx context.Context, idleTimeout time.Duration) (int, error) {
	ctx, span := t.start(ctx, "CleanupOrphanedSessions")
	r0, err := t.p.CleanupOrphanedSessions(ctx, idleTimeout)
	endSpan(span, err)
	return r0, err
}

func (t *tracedProvider) EnqueueForOrchestrator(ctx context.Context, item provider.WorkItem, delay time.Duration) error {
	ctx, span := t.start(ctx, "EnqueueForOrchestrator", item.TargetInstance())
	err := t.p.EnqueueForOrchestrator(ctx, item, delay)
	endSpan(span, err)
	return err
}

func (t *tracedProvider) CustomStatus(ctx context.Context, instance string, lastSeenVersion uint64) (*provider.CustomStatus, error) {
	ctx, span := t.start(ctx, "CustomStatus", instance)
	r0, err := t.p.CustomStatus(ctx, instance, lastSeenVersion)
	endSpan(span, err)
	return r0, err
}

func (t *tracedProvider) KVValue(ctx context.Context, instance string, key string) (string, bool, error) {
	ctx, span := t.start(ctx, "KVValue", instance)
	r0, r1, err := t.p.KVValue(ctx, instance, key)
	endSpan(span, err)
	return r0, r1, err
}

func (t *tracedProvider) KVValues(ctx context.Context, instance string) (map[string]string, error) {
	ctx, span := t.start(ctx, "KVValues", instance)
	r0, err := t.p.KVValues(ctx, instance)
	endSpan(span, err)
	return r0, err
}

func (t *tracedProvider) InstanceStats(ctx context.Context, instance string) (*provider.SystemStats, error) {
	ctx, span := t.start(ctx, "InstanceStats", instance)
	r0, err := t.p.InstanceStats(ctx, instance)
	endSpan(span, err)
	return r0, err
}

func (t *tracedAdminProvider) ListInstances(ctx context.Context) ([]string, error) {
	ctx, span := t.start(ctx, "ListInstances")
	r0, err := t.admin.ListInstances(ctx)
	endSpan(span, err)
	return r0, err
}

func (t *tracedAdminProvider) ListInstancesByStatus(ctx context.Context, status string) ([]string, error) {
	ctx, span := t.start(ctx, "ListInstancesByStatus")
	r0, err := t.admin.ListInstancesByStatus(ctx, status)
	endSpan(span, err)
	return r0, err
}

func (t *tracedAdminProvider) ListExecutions(ctx context.Context, instance string) ([]uint64, error) {
	ctx, span := t.start(ctx, "ListExecutions", instance)
	r0, err := t.admin.ListExecutions(ctx, instance)
	endSpan(span, err)
	return r0, err
}

func (t *tracedAdminProvider) ReadHistoryWithExecutionID(ctx context.Context, instance string, executionID uint64) ([]provider.Event, error) {
	ctx, span := t.start(ctx, "ReadHistoryWithExecutionID", instance)
	r0, err := t.admin.ReadHistoryWithExecutionID(ctx, instance, executionID)
	endSpan(span, err)
	return r0, err
}

func (t *tracedAdminProvider) ReadHistory(ctx context.Context, instance string) ([]provider.Event, error) {
	ctx, span := t.start(ctx, "ReadHistory", instance)
	r0, err := t.admin.ReadHistory(ctx, instance)
	endSpan(span, err)
	return r0, err
}

func (t *tracedAdminProvider) LatestExecutionID(ctx context.Context, instance string) (uint64, error) {
	ctx, span := t.start(ctx, "LatestExecutionID", instance)
	r0, err := t.admin.LatestExecutionID(ctx, instance)
	endSpan(span, err)
	return r0, err
}

func (t *tracedAdminProvider) InstanceInfo(ctx context.Context, instance string) (*provider.InstanceInfo, error) {
	ctx, span := t.start(ctx, "InstanceInfo", instance)
	r0, err := t.admin.InstanceInfo(ctx, instance)
	endSpan(span, err)
	return r0, err
}

func (t *tracedAdminProvider) ExecutionInfo(ctx context.Context, instance string, executionID uint64) (*provider.ExecutionInfo, error) {
	ctx, span := t.start(ctx, "ExecutionInfo", instance)
	r0, err := t.admin.ExecutionInfo(ctx, instance, executionID)
	endSpan(span, err)
	return r0, err
}

func (t *tracedAdminProvider) SystemMetrics(ctx context.Context) (provider.SystemMetrics, error) {
	ctx, span := t.start(ctx, "SystemMetrics")
	r0, err := t.admin.SystemMetrics(ctx)
	endSpan(span, err)
	return r0, err
}

func (t *tracedAdminProvider) QueueDepths(ctx context.Context) (provider.QueueDepths, error) {
	ctx, span := t.start(ctx, "QueueDepths")
	r0, err := t.admin.QueueDepths(ctx)
	endSpan(span, err)
	return r0, err
}

func (t *tracedAdminProvider) ListChildren(ctx context.Context, instance string) ([]string, error) {
	ctx, span := t.start(ctx, "ListChildren", instance)
	r0, err := t.admin.ListChildren(ctx, instance)
	endSpan(span, err)
	return r0, err
}

func (t *tracedAdminProvider) ParentID(ctx context.Context, instance string) (string, error) {
	ctx, span := t.start(ctx, "ParentID", instance)
	r0, err := t.admin.ParentID(ctx, instance)
	endSpan(span, err)
	return r0, err
}

func (t *tracedAdminProvider) DeleteInstancesAtomic(ctx context.Context, ids []string, force bool) (provider.DeleteInstanceResult, error) {
	ctx, span := t.start(ctx, "DeleteInstancesAtomic")
	r0, err := t.admin.DeleteInstancesAtomic(ctx, ids, force)
	endSpan(span, err)
	return r0, err
}

func (t *tracedAdminProvider) DeleteInstanceBulk(ctx context.Context, filter provider.InstanceFilter) (provider.DeleteInstanceResult, error) {
	ctx, span := t.start(ctx, "DeleteInstanceBulk")
	r0, err := t.admin.DeleteInstanceBulk(ctx, filter)
	endSpan(span, err)
	return r0, err
}

func (t *tracedAdminProvider) PruneExecutions(ctx context.Context, instance string, options provider.PruneOptions) (provider.PruneResult, error) {
	ctx, span := t.start(ctx, "PruneExecutions", instance)
	r0, err := t.admin.PruneExecutions(ctx, instance, options)
	endSpan(span, err)
	return r0, err
}

func (t *tracedAdminProvider) PruneExecutionsBulk(ctx context.Context, filter provider.InstanceFilter, options provider.PruneOptions) (provider.PruneResult, error) {
	ctx, span := t.start(ctx, "PruneExecutionsBulk")
	r0, err := t.admin.PruneExecutionsBulk(ctx, filter, options)
	endSpan(span, err)
	return r0, err
}
