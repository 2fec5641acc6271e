// Package durable runs durable orchestrations written as ordinary Go code
// on any [provider.Provider]: the in-memory provider in tests, DynamoDB and
// SQS (package dynamo) in production. Its histories, work items and event
// ids are duroxide's, so either runtime can read, replay and manage the
// other's instances.
//
// # Definitions
//
// An orchestration is a function of an [*OrchestrationContext] and an
// input; it calls activities, timers, sub-orchestrations and external
// events through the context, and every such call returns a [Future]. An
// activity is a plain function of a [context.Context] and an input; it does
// the I/O. [NewOrchestration] and [NewActivity] make typed definitions whose
// inputs and outputs are encoded as JSON ([Raw] passes a string as it is);
// [OrchestrationFunc] and [ActivityFunc] take strings. A [Registry] holds
// the definitions a runtime serves, orchestrations by name and [Version].
//
// # Running and starting
//
// [NewRuntime] makes a runtime on a provider and a registry; [Runtime.Start]
// starts its orchestration and worker slots and [Runtime.Shutdown] stops
// them: turns in flight commit, running activities are cancelled and
// abandoned for another process to run. [Runtime.Run] does both around a
// context's life; [Runtime.RunUntilIdle] runs until the work in hand is
// done, for a function invoked now and then (AWS Lambda). A [Client]
// ([Runtime.Client], or [NewClient] on a provider, in a process that runs no
// work) starts instances, raises events, cancels, waits for an instance's
// [Status], reads KV values and manages instances (listing, deleting,
// pruning, metrics).
//
// # Rules for orchestration code
//
// An orchestration runs again from its history on later turns, so it must
// make the same durable calls in the same order given the same history:
// no goroutines, channels or select ([Go], [Race], [WaitAny] and
// [AwaitAll] instead), no clocks ([OrchestrationContext.Now] and the
// context's timers instead), no randomness, no iteration over maps that
// drives durable calls, no I/O. The analyzer in cmd/durablevet reports
// breaches of these rules, and durabletest.ReplayHistory checks changed
// code against recorded histories before it is deployed.
//
// Package durabletest runs orchestrations in unit tests with a clock that
// skips ahead and activity mocks; package runtimetest is the end-to-end
// suite a provider's runtime passes. docs/runtime.md describes how a turn
// is computed, the dispatchers and where this runtime differs from
// duroxide's.
package durable
