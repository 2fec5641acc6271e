package durabletest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/durable/durabletest"
)

type Order struct {
	SKU   string `json:"sku"`
	Cents int    `json:"cents"`
}

var (
	reserve = durable.NewActivity("Reserve", func(ctx context.Context, sku string) (bool, error) {
		return false, errors.New("calls the warehouse")
	})
	charge = durable.NewActivity("Charge", func(ctx context.Context, cents int) (string, error) {
		return "", errors.New("calls the payment provider")
	})
	// ProcessOrder reserves the item, gives the customer a day to cancel,
	// then charges.
	processOrder = durable.NewOrchestration("ProcessOrder", func(ctx *durable.OrchestrationContext, o Order) (string, error) {
		ok, err := reserve.Call(ctx, o.SKU).Get(ctx)
		if err != nil {
			return "", err
		}
		if !ok {
			return "out of stock", nil
		}
		cancel := durable.WaitForEvent[string](ctx, "Cancel")
		if durable.Race(ctx, cancel, ctx.CreateTimer(24*time.Hour)) == 0 {
			return "cancelled", nil
		}
		receipt, err := charge.Call(ctx, o.Cents).Get(ctx)
		if err != nil {
			return "", err
		}
		return receipt + " at " + ctx.Now().Format(time.DateTime), nil
	})
)

// testProcessOrder is what a unit test of ProcessOrder looks like: its body
// runs as is inside func TestProcessOrder(t *testing.T).
func testProcessOrder(t testing.TB) {
	reg, err := durable.NewRegistry(processOrder, reserve, charge)
	if err != nil {
		t.Fatal(err)
	}
	env := durabletest.New(t, reg)
	durabletest.Mock(env, reserve, func(sku string) (bool, error) { return sku == "book", nil })
	durabletest.Mock(env, charge, func(cents int) (string, error) { return fmt.Sprintf("receipt-%d", cents), nil })

	env.Start("ProcessOrder", "order-1", Order{SKU: "book", Cents: 1250})
	st := env.Wait("order-1") // the 24 h timer fires at once
	out, _ := durable.Output[string](st)
	fmt.Println(st.State, out)

	env.Start("ProcessOrder", "order-2", Order{SKU: "book", Cents: 990})
	env.AfterFunc(2*time.Hour, func() { env.RaiseEvent("order-2", "Cancel", "changed my mind") })
	st = env.Wait("order-2")
	out, _ = durable.Output[string](st)
	fmt.Println(st.State, out, "after", env.Now().Sub(durabletest.DefaultStartTime)) // simulated time since the start
	// When the test ends, both histories are replayed against the code.
}

func Example() {
	t := &exampleT{}
	defer t.finish()
	testProcessOrder(t)
	// Output:
	// Completed receipt-1250 at 2025-01-02 00:00:00
	// Completed cancelled after 26h0m0s
}

// A recorded execution of a greeting orchestration, as
// "duradyn history greet-1 --json" prints it.
const greetHistory = `
{"event_id":1,"source_event_id":null,"instance_id":"greet-1","execution_id":1,"timestamp_ms":1735689600000,"duroxide_version":"0.1.29","type":"OrchestrationStarted","name":"Greeting","version":"1.0.0","input":"\"Ada\"","parent_instance":null,"parent_id":null}
{"event_id":2,"source_event_id":null,"instance_id":"greet-1","execution_id":1,"timestamp_ms":1735689600000,"duroxide_version":"0.1.29","type":"ActivityScheduled","name":"Greet","input":"\"Ada\""}
{"event_id":3,"source_event_id":2,"instance_id":"greet-1","execution_id":1,"timestamp_ms":1735689600005,"duroxide_version":"0.1.29","type":"ActivityCompleted","result":"\"Hello, Ada!\""}
{"event_id":4,"source_event_id":null,"instance_id":"greet-1","execution_id":1,"timestamp_ms":1735689600005,"duroxide_version":"0.1.29","type":"OrchestrationCompleted","output":"\"Hello, Ada!\""}
`

func ExampleReplayHistory() {
	t := &exampleT{}
	defer t.finish()

	// Today's code: the same as when the history was recorded.
	greeting := durable.NewOrchestration("Greeting", func(ctx *durable.OrchestrationContext, name string) (string, error) {
		return greet.Call(ctx, name).Get(ctx)
	})
	reg, _ := durable.NewRegistry(greeting, greet)
	if durabletest.ReplayHistory(t, reg, strings.NewReader(greetHistory)) == nil {
		fmt.Println("replays")
	}

	// A change that would break the running instances of the old code.
	changed := durable.NewOrchestration("Greeting", func(ctx *durable.OrchestrationContext, name string) (string, error) {
		return greet.Call(ctx, strings.ToUpper(name)).Get(ctx)
	})
	reg, _ = durable.NewRegistry(changed, greet)
	err := durabletest.ReplayJSON(reg, strings.NewReader(greetHistory))
	fmt.Println(errors.Is(err, durable.ErrNondeterminism))
	fmt.Println(err)
	// Output:
	// replays
	// true
	// replay of instance greet-1 execution 1: nondeterministic: schedule mismatch: action=CallActivity { name: "Greet", input: "\"ADA\"", session_id: None, tag: None } vs event=ActivityScheduled { name: "Greet", input: "\"Ada\"", session_id: None, tag: None } (call #1, at example_test.go:106 in durabletest_test.ExampleReplayHistory.func2)
}

// exampleT stands in for the *testing.T of a test so that the examples
// can run: failures are printed.
type exampleT struct {
	testing.TB
	cleanups []func()
}

func (t *exampleT) Helper()                           {}
func (t *exampleT) Cleanup(fn func())                 { t.cleanups = append(t.cleanups, fn) }
func (t *exampleT) Errorf(format string, args ...any) { fmt.Printf("FAIL: "+format+"\n", args...) }
func (t *exampleT) Fatalf(format string, args ...any) { t.Fatal(fmt.Sprintf(format, args...)) }
func (t *exampleT) Fatal(args ...any)                 { panic(fmt.Sprint(args...)) }

func (t *exampleT) finish() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}
