// Command durablevet reports code that would make a durable orchestration
// non-deterministic on replay.
//
// The runtime in package github.com/duradyn/duradyn/durable runs an
// orchestration again from the start on every turn and matches what it does
// against the recorded history, so orchestration code must take the same path
// on every run. durablevet checks every function, declared or literal, with a
// parameter of type *durable.OrchestrationContext, and every function of the
// same package that such a function calls statically (directly or through
// other such functions). Calls into other packages, through interfaces or
// through function values are not followed. The durable package itself, and
// the internal packages below it, are not checked: they implement the
// deterministic primitives with the very constructs reported here.
//
// # Rules
//
// Each report starts with the construct and names its durable replacement.
//
//   - go: a go statement. The goroutine runs outside the replay scheduler.
//     Use durable.Go, which runs the function as a deterministic coroutine
//     and returns a Future.
//   - select: a select statement picks among ready cases at random. Use
//     durable.Race (cancels the losers) or durable.WaitAny.
//   - channel: make(chan ...), a send, a receive, or a range over a channel.
//     A channel blocks outside the replay scheduler. Use futures: Future.Get,
//     durable.WaitAny, durable.AwaitAll. The send or receive of a select case
//     is covered by the report of the select.
//   - time: time.Now, time.Since and time.Until read the wall clock, which
//     differs on replay; use ctx.Now(), which replays identically.
//     time.Sleep, time.After, time.AfterFunc, time.NewTimer, time.Tick and
//     time.NewTicker start runtime timers that are not recorded; use
//     ctx.Sleep(d) or ctx.CreateTimer(d).
//   - rand: any package-level function of math/rand or math/rand/v2, and
//     anything package-level of crypto/rand (rand.Reader included). Use
//     ctx.NewGUID, or pass randomness in as input.
//   - maprange: a range over a map, or over maps.All, maps.Keys or
//     maps.Values. Map iteration order is random; range over sorted keys,
//     for example slices.Sorted(maps.Keys(m)).
//
// A report inside a helper ends with the orchestration it was reached from.
//
// # Suppressing a report
//
// A //durablevet:ignore comment suppresses the reports on its own line, and,
// when it stands alone on its line, on the line below it. Text after the
// directive is free, for a reason:
//
//	//durablevet:ignore the map has one key
//	for k, v := range single {
//
// On the line of a call of a helper the directive also stops durablevet from
// following the call.
//
// # Running
//
// As a standalone checker, from the module root:
//
//	go run ./cmd/durablevet ./...
//
// or as a vet tool:
//
//	go install ./cmd/durablevet
//	go vet -vettool=$(which durablevet) ./...
//
// It exits with status 3 when it reports anything. make lint runs it over
// ./durable/... when that directory exists. The analyzer itself is
// determinism.Analyzer in package
// github.com/duradyn/duradyn/cmd/durablevet/determinism, for use in other
// drivers.
package main
