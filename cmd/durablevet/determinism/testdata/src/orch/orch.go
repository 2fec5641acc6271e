// Package orch exercises every rule of the determinism analyzer.
package orch

import (
	crand "crypto/rand"
	"maps"
	"math/rand"
	randv2 "math/rand/v2"
	"slices"
	"time"

	"github.com/duradyn/duradyn/durable"
)

// Statements covers go, select and channels.
func Statements(ctx *durable.OrchestrationContext, in string) (string, error) {
	go func() {}() // want `go statement in orchestration: use durable\.Go`

	ch := make(chan string, 1) // want `make\(chan\) in orchestration: use futures`
	ch <- in                   // want `channel send in orchestration: use futures`
	out := <-ch                // want `channel receive in orchestration: use futures`
	for v := range ch {        // want `range over channel in orchestration: use futures`
		out += v
	}

	select { // want `select in orchestration: use durable\.Race or durable\.WaitAny`
	case v := <-ch:
		out += v
	case ch <- out:
	case <-time.After(time.Second): // want `time\.After in orchestration: use ctx\.CreateTimer\(d\)`
	default:
	}
	return out, nil
}

// Clock covers package time.
func Clock(ctx *durable.OrchestrationContext, start time.Time) error {
	now := time.Now()          // want `time\.Now in orchestration: use ctx\.Now\(\)`
	time.Sleep(time.Second)    // want `time\.Sleep in orchestration: use ctx\.Sleep\(d\)`
	<-time.After(time.Second)  // want `channel receive in orchestration` `time\.After in orchestration: use ctx\.CreateTimer\(d\)`
	_ = time.Tick(time.Second) // want `time\.Tick in orchestration: use ctx\.CreateTimer\(d\) in a loop`
	t := time.NewTimer(0)      // want `time\.NewTimer in orchestration: use ctx\.CreateTimer\(d\)`
	k := time.NewTicker(1)     // want `time\.NewTicker in orchestration: use ctx\.CreateTimer\(d\) in a loop`
	_ = time.Since(start)      // want `time\.Since in orchestration: use ctx\.Now\(\)\.Sub\(t\)`
	_ = time.Until(start)      // want `time\.Until in orchestration: use t\.Sub\(ctx\.Now\(\)\)`
	_ = time.AfterFunc(0, nil) // want `time\.AfterFunc in orchestration`
	clock := time.Now          // want `time\.Now in orchestration`
	t.Stop()                   // methods are not reported
	k.Stop()
	_ = now.Add(time.Minute) // time.Duration and time.Time methods are fine
	_ = clock
	_ = ctx.Now().Sub(start)
	return ctx.Sleep(time.Second)
}

// Random covers math/rand, math/rand/v2 and crypto/rand.
func Random(ctx *durable.OrchestrationContext, seed int64) (int, error) {
	a := rand.Intn(10)                  // want `math/rand in orchestration: use ctx\.NewGUID or pass randomness in as input`
	r := rand.New(rand.NewSource(seed)) // want `math/rand in orchestration` `math/rand in orchestration`
	b := r.Intn(10)                     // a method of a seeded generator is not reported
	c := randv2.IntN(10)                // want `math/rand/v2 in orchestration: use ctx\.NewGUID or pass randomness in as input`
	d := randv2.N[int64](10)            // want `math/rand/v2 in orchestration`
	buf := make([]byte, 8)
	_, err := crand.Read(buf) // want `crypto/rand in orchestration: use ctx\.NewGUID or pass randomness in as input`
	_ = crand.Reader          // want `crypto/rand in orchestration`
	return a + b + c + int(d), err
}

// Maps covers range over maps.
func Maps(ctx *durable.OrchestrationContext, m map[string]int) int {
	n := 0
	for k := range m { // want `range over map in orchestration: iteration order is random; range over sorted keys`
		n += m[k]
	}
	for k := range maps.Keys(m) { // want `range over maps\.Keys in orchestration: iteration order is random`
		n += m[k]
	}
	for _, k := range slices.Sorted(maps.Keys(m)) { // sorted keys are fine
		n += m[k]
	}
	type counts map[string]int
	for range counts(m) { // want `range over map in orchestration`
		n++
	}
	for i := range 3 { // ranges over integers and slices are fine
		n += i
	}
	return n
}

// Literal checks a function literal with the context parameter, written in a
// function without one.
func Literal() {
	register(func(ctx *durable.OrchestrationContext, in string) (string, error) {
		_ = time.Now() // want `time\.Now in orchestration: use ctx\.Now\(\)`
		return in, nil
	})
}

func register(fn func(*durable.OrchestrationContext, string) (string, error)) {}

// Branch uses durable.Go with a literal: the literal is an orchestration of
// its own, checked once.
func Branch(ctx *durable.OrchestrationContext) {
	durable.Go(ctx, func(ctx *durable.OrchestrationContext) error {
		time.Sleep(time.Second) // want `time\.Sleep in orchestration: use ctx\.Sleep\(d\)`
		return nil
	})
	less := func(a, b int) bool {
		_ = time.Now() // want `time\.Now in orchestration`
		return a < b
	}
	_ = less
}

// NotOrchestration holds the same code in a function without the context
// parameter: nothing is reported.
func NotOrchestration(m map[string]int, seed int64) {
	go func() {}()
	ch := make(chan int, 1)
	ch <- 1
	<-ch
	select {
	case <-ch:
	default:
	}
	_ = time.Now()
	time.Sleep(0)
	_ = rand.Intn(10)
	_ = rand.New(rand.NewSource(seed))
	for range m {
	}
	helperOnlyFromPlainCode()
}

// NotContextValue takes the context by value, which is not the
// orchestration signature.
func NotContextValue(ctx durable.OrchestrationContext) {
	_ = time.Now()
}

func helperOnlyFromPlainCode() { _ = time.Now() }
