// Package durabletest tests orchestrations: [Env] runs them on the real
// runtime over an in-memory provider with a simulated clock that skips
// timers, and [Replay] / [ReplayHistory] check that recorded histories
// (duroxide JSON lines, as "duradyn history --json" prints them) still
// replay against today's code.
//
// A unit test of an orchestration:
//
//	env := durabletest.New(t, reg)
//	durabletest.Mock(env, chargeCard, func(in Charge) (Receipt, error) { return Receipt{ID: "r-1"}, nil })
//	env.Start("ProcessOrder", "order-1", order)
//	st := env.Wait("order-1") // a 24 h timer inside fires at once
//
// Every turn the runtime runs is also computed from history
// (durable.Options.VerifyReplay 1) and compared, so code that is not
// deterministic, such as a range over a map, fails the test at once, with
// the orchestration, its version and the source line of the first call
// that differs; the runtime's kept code would otherwise hide it.
//
// A determinism check before deploying new code:
//
//	f, _ := os.Open("testdata/order-1.jsonl")
//	durabletest.ReplayHistory(t, reg, f)
//
// # How time skipping works
//
// The provider the runtime sees is a wrapper around memprovider whose fetch
// calls never long-poll: each makes one non-blocking attempt and otherwise
// parks until the wrapper sees a change (an enqueue, ack, abandon or clock
// move). The runtime's slots are the only fetchers and hold their item
// until the next fetch, so when every slot is parked after an attempt made
// since the last change, nothing can happen at the current simulated time.
// The driver ([Env.Run], [Env.Wait]) then moves the clock to the earliest
// time a delayed message becomes visible — a timer's fire time, which the
// wrapper reads from the TimerFired items of each committed turn, or the
// end of an abandon's delay — and the slots look again. No real-time sleep
// takes part in this; a run of timers of days takes milliseconds.
package durabletest
