// Command durablevet reports code that would make a durable orchestration
// non-deterministic on replay.
//
// The runtime in package github.com/duradyn/duradyn/durable runs an
// orchestration again from the start on every turn and matches what it does
// against the recorded history, so orchestration code must take the same path
// on every run. durablevet checks every function, declared or literal, with a
// parameter of type *durable.OrchestrationContext, and every function it
// calls statically, directly or through other functions:
//
//   - a function of the same package is followed, and a construct in it is
//     reported where it is written, ending with "(in a helper called from
//     orchestration Name)";
//   - a function of another package of the same module is followed too, and
//     the call is reported at the orchestration's call site (or the helper's),
//     naming the chain of calls and the file and line of the construct it
//     reaches.
//
// A call of billing.Due, which calls clock.Stamp, which calls clock.now,
// which calls time.Now, is reported as
//
//	time.Now in orchestration, through billing.Due -> clock.Stamp -> clock.now (clock.go:19): use ctx.Now()
//
// The analyzer learns what a function of another package reaches from an
// analysis fact it exports for that function when it checks the function's
// package: both drivers below, the standalone checker and go vet, run it on
// every dependency first. A
// function's fact names the first construct a breadth-first walk of its calls
// finds; fixing it may reveal the next one. Functions that take a
// *durable.OrchestrationContext get no fact: they are orchestration code
// themselves, reported in their own package, so check every package that
// declares orchestrations (./...).
//
// Not followed: calls through interfaces and function values, calls into
// other modules and the standard library (beyond the functions listed
// below), and calls into the durable package, which with the internal
// packages below it is not checked at all: it implements the deterministic
// primitives with the very constructs reported here.
//
// # Rules
//
// Each report starts with the construct and names its replacement. Its
// category, in -json output, is the name below.
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
//   - env: the process's environment and identity, which differ between
//     workers and over time: os.Getenv, os.LookupEnv, os.Environ,
//     os.ExpandEnv, os.Setenv, os.Unsetenv, os.Clearenv, os.Args,
//     os.Hostname, os.Executable, os.Getwd, os.Chdir, os.Getpid and the other
//     user and group ids, os.TempDir and the user directories. Read them in
//     an activity, or pass the values in as input.
//   - file: the file system: os.ReadFile, os.ReadDir, os.Open, os.OpenFile,
//     os.OpenRoot, os.OpenInRoot, os.Create, os.CreateTemp, os.MkdirTemp,
//     os.WriteFile, os.Stat, os.Lstat, os.Readlink, os.Remove, os.RemoveAll,
//     os.Rename, os.Mkdir, os.MkdirAll, os.Chmod, os.Chown, os.Lchown,
//     os.Chtimes, os.Link, os.Symlink, os.Truncate, os.DirFS, os.CopyFS,
//     os.Stdin, the file functions of io/ioutil, and filepath.Glob,
//     filepath.Walk, filepath.WalkDir, filepath.EvalSymlinks and
//     filepath.Abs. Do file I/O in an activity. Methods of an *os.File are
//     not reported again: the call that opened it was.
//   - global: a write to a package-level variable, of this package or
//     another: =, op=, ++, --, a range that assigns to it, delete or clear of
//     it, also through a field, an element or a pointer it holds
//     (cfg.Limit = 3, seen[k] = true, last.N = 1). A replay does not restore
//     package state, and every instance a process runs shares it. Keep state
//     in local variables, or pass it in as input. Reads are not reported.
//   - atomic: a function of sync/atomic whose first argument points into a
//     package-level variable (atomic.AddInt64(&hits, 1), atomic.LoadInt64),
//     and any method of an atomic type held in one (total.Add(1),
//     ready.Load() for a package-level atomic.Int64 or atomic.Bool), for the
//     same reasons. Atomics on local state are not reported.
//   - continueasnew: a call of ctx.ContinueAsNew whose error is discarded:
//     a call statement, an assignment or declaration to _, go or defer. This
//     rule applies in every function of a checked package, orchestration or
//     not. The runtime continues as new once the call is made, whatever the
//     orchestration then returns, so what it returns is silently dropped.
//     Write return ctx.ContinueAsNew(in) (or return zero, ctx.ContinueAsNew(in)).
//
// A report inside a helper ends with the orchestration it was reached from.
//
// # Known false positives and suppressing a report
//
// durablevet does not reason about what the code computes. A range over a
// map whose result does not depend on the order, such as a sum of its
// values, is reported like any other map range; so is a write to a
// package-level variable that only a test ever reads. Silence such a report
// with a //durablevet:ignore comment, and say why after it.
//
// The directive suppresses the reports on its own line, and, when it stands
// alone on its line, on the line below it:
//
//	total := 0
//	//durablevet:ignore the sum does not depend on the order
//	for _, price := range prices {
//		total += price
//	}
//
//	stamp := clock.Stamp() //durablevet:ignore only logged, never decides a path
//
// On the line of a call of a helper the directive also stops durablevet from
// following the call. Inside a helper of another package it suppresses the
// construct where it is written, so the helper's callers are not reported
// for it either. The spelling is exact: no space after //, and white space
// or the end of the comment after ignore.
//
// # Running
//
// As a standalone checker, from the module root:
//
//	go run ./cmd/durablevet ./...
//
// It exits with status 3 when it reports anything, naming the file, line and
// column of each report. make check and make lint run it over ./durable/...;
// it checks test files too (-test=false leaves them out).
//
// Or as a vet tool, which computes the facts of each dependency in the same
// run:
//
//	go install ./cmd/durablevet
//	go vet -vettool=$(which durablevet) ./...
//
// go vet exits with status 1 when the tool reports anything. It caches each
// package's result under the tool's build ID and, as of Go 1.26, also
// replays for a package the empty result of a run made only for the facts
// of a package that imports it: go vet ./calls followed by go vet ./clock
// reports nothing for clock (go vet's own checks behave the same). In CI,
// prefer the standalone checker, which keeps no cache, or pass go vet -a
// (which rebuilds everything).
//
// The analyzer itself is determinism.Analyzer in package
// github.com/duradyn/duradyn/cmd/durablevet/determinism, for use in other
// drivers; they must support facts (analysis.Analyzer.FactTypes) for calls
// into other packages to be followed.
package main
