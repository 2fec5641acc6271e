package scenario

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/duradyn/duradyn/durable"
)

// ErrWrongOutput is wrapped by the error of a scenario whose instances
// completed with an output other than the expected one (a lost or wrong
// activity result).
var ErrWrongOutput = errors.New("scenario: wrong output")

// cities are the five cities HelloCities5 greets, in order.
var cities = []string{"Tokyo", "Seattle", "London", "Lagos", "Lima"}

// greeting is what Hello returns for city.
func greeting(city string) string { return "Hello, " + city + "!" }

// helloActivity greets a city: the activity of every scenario.
var helloActivity = durable.NewActivity("Hello", func(_ context.Context, city string) (string, error) {
	return greeting(city), nil
})

// helloCities5 greets the five cities one after the other.
var helloCities5 = durable.NewOrchestration("HelloCities5", func(ctx *durable.OrchestrationContext, _ struct{}) ([]string, error) {
	out := make([]string, 0, len(cities))
	for _, city := range cities {
		s, err := helloActivity.Call(ctx, city).Get(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
})

// helloOnce greets one city: one activity, two turns.
var helloOnce = durable.NewOrchestration("HelloOnce", func(ctx *durable.OrchestrationContext, city string) (string, error) {
	return helloActivity.Call(ctx, city).Get(ctx)
})

// fanOut schedules n greetings at once, awaits them all and checks that
// every result is present and right; it returns how many it checked.
var fanOut = durable.NewOrchestration("FanOut", func(ctx *durable.OrchestrationContext, n int) (int, error) {
	fs := make([]durable.Future[string], n)
	for i := range n {
		fs[i] = helloActivity.Call(ctx, strconv.Itoa(i))
	}
	out, err := durable.AwaitAll(ctx, fs...)
	if err != nil {
		return 0, err
	}
	for i, s := range out {
		if s != greeting(strconv.Itoa(i)) {
			return i, fmt.Errorf("%w: result %d is %q", ErrWrongOutput, i, s)
		}
	}
	return len(out), nil
})

// trivial completes on its first turn, without activities: the terminal
// instances FetchCost seeds the table with.
var trivial = durable.NewOrchestration("Trivial", func(_ *durable.OrchestrationContext, _ struct{}) (struct{}, error) {
	return struct{}{}, nil
})

// newRegistry registers every orchestration and activity of the scenarios.
func newRegistry() (*durable.Registry, error) {
	return durable.NewRegistry(helloActivity, helloCities5, helloCities5Padded, helloOnce, fanOut, step, chain, paddedStep, chainPadded, awaitNever, trivial)
}

// step returns its input plus one: the activity of Chain.
var step = durable.NewActivity("Step", func(_ context.Context, i int) (int, error) {
	return i + 1, nil
})

// chain calls step n times one after the other, each with the previous
// one's output, and returns how many steps returned their input plus one.
var chain = durable.NewOrchestration("Chain", func(ctx *durable.OrchestrationContext, n int) (int, error) {
	for i := range n {
		got, err := step.Call(ctx, i).Get(ctx)
		if err != nil {
			return i, err
		}
		if got != i+1 {
			return i, fmt.Errorf("%w: step %d returned %d", ErrWrongOutput, i, got)
		}
	}
	return n, nil
})

// paddedInput is the input and the output of paddedStep: a step's number
// and filler that makes the payload the size asked for.
type paddedInput struct {
	I   int    `json:"i"`
	Pad string `json:"pad"`
}

// paddedStep is step with a payload: it returns its input's number plus
// one and its filler unchanged, so that its output is as large as its
// input.
var paddedStep = durable.NewActivity("PaddedStep", func(_ context.Context, in paddedInput) (paddedInput, error) {
	return paddedInput{I: in.I + 1, Pad: in.Pad}, nil
})

// chainPadded is chain with payloads: it calls paddedStep pad.Steps times
// one after the other, each with pad.Bytes of filler of its own (hex
// digits, or base64 of random bytes when pad.Random), and returns how many
// steps returned their number plus one and their filler. Its own input and
// output stay small.
var chainPadded = durable.NewOrchestration("ChainPadded", func(ctx *durable.OrchestrationContext, pad chainPad) (int, error) {
	for i := range pad.Steps {
		in := paddedInput{I: i, Pad: pad.filler(uint64(i))}
		got, err := paddedStep.Call(ctx, in).Get(ctx)
		if err != nil {
			return i, err
		}
		if got.I != i+1 || got.Pad != in.Pad {
			return i, fmt.Errorf("%w: step %d returned %d and %.40q", ErrWrongOutput, i, got.I, got.Pad)
		}
	}
	return pad.Steps, nil
})

// chainPad is chainPadded's input.
type chainPad struct {
	Steps  int  `json:"steps"`
	Bytes  int  `json:"bytes"`
	Random bool `json:"random,omitempty"`
}

// filler is the filler of step i.
func (pad chainPad) filler(i uint64) string {
	if pad.Random {
		return randomFiller(i, pad.Bytes)
	}
	return filler(i, pad.Bytes)
}

// filler is n pseudo-random hex digits drawn from seed: text that JSON
// encodes as n bytes and that compresses to about half, as identifiers and
// digests do (a repeated pattern would compress to almost nothing and hide
// what a payload costs). The same seed gives the same text, as replay
// needs.
func filler(seed uint64, n int) string {
	const digits = "0123456789abcdef"
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[r.IntN(len(digits))]
	}
	return string(b)
}

// helloCities5Padded is helloCities5 with activity inputs (and so outputs)
// of pad bytes more: each city is sent with pad bytes of filler, and Hello
// greets all of it. It returns how many greetings were right, so that its
// own output stays small.
var helloCities5Padded = durable.NewOrchestration("HelloCities5Padded", func(ctx *durable.OrchestrationContext, pad int) (int, error) {
	for i, city := range cities {
		in := city + " " + filler(uint64(i), pad)
		s, err := helloActivity.Call(ctx, in).Get(ctx)
		if err != nil {
			return i, err
		}
		if s != greeting(in) {
			return i, fmt.Errorf("%w: %s greeted as %.40q", ErrWrongOutput, city, s)
		}
	}
	return len(cities), nil
})
