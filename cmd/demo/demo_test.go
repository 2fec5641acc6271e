package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/localstack"
)

func TestMain(m *testing.M) { os.Exit(localstack.Main(m)) }

// TestDemo runs the demo on the test binary's emulator and checks the three
// outcomes, the report, and that the demo leaves no goroutine behind.
func TestDemo(t *testing.T) {
	ep := localstack.ForTest(t)
	// The emulator's own goroutines live until TestMain stops it.
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

	var out bytes.Buffer
	res, err := run(t.Context(), newConsole(&out), ep)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if len(res.orders) != 3 {
		t.Fatalf("%d orders, want 3", len(res.orders))
	}
	byID := map[string]orderResult{}
	for _, o := range res.orders {
		byID[o.order.ID] = o
	}

	// order-1 completes: delivery confirmed before the timeout.
	o1 := byID["order-1"]
	rc, err := durable.Output[Receipt](o1.status)
	if err != nil {
		t.Fatalf("order-1: %v", err)
	}
	if rc.Delivery != "signed by Ada Lovelace" || rc.AuthCode == "" || rc.Tracking == "" {
		t.Errorf("order-1 receipt %+v", rc)
	}
	if o1.child == nil || o1.child.State != durable.StateCompleted {
		t.Errorf("order-1's ShipOrder: %+v, want completed", o1.child)
	}
	if got := o1.kv[kvState]; got != "delivered" {
		t.Errorf("order-1 %s = %q, want delivered", kvState, got)
	}
	// The first ChargePayment attempt failed and was retried.
	var failed, charges int
	for _, e := range res.history {
		if strings.Contains(summarize(e, 0), actCharge) {
			charges++
		}
		if e.Kind.EventType() == "ActivityFailed" {
			failed++
		}
	}
	if charges != 2 || failed != 1 {
		t.Errorf("order-1 history: %d ChargePayment attempts and %d failures, want 2 and 1", charges, failed)
	}

	// order-2 fails after compensation.
	o2 := byID["order-2"]
	if o2.status.State != durable.StateFailed || !strings.Contains(o2.status.Failure.DisplayMessage(), "payment declined") {
		t.Errorf("order-2: %s %v, want failed with payment declined", o2.status.State, o2.status.Failure)
	}
	if got := o2.kv[kvState]; got != "compensated" {
		t.Errorf("order-2 %s = %q, want compensated", kvState, got)
	}
	if o2.child != nil {
		t.Errorf("order-2 started ShipOrder: %+v", o2.child)
	}

	// order-3 is cancelled, and so is its ShipOrder.
	o3 := byID["order-3"]
	if reason, ok := cancelReasonOf(o3.status); !ok || reason != cancelReason {
		t.Errorf("order-3: %s %v, want cancelled with %q", o3.status.State, o3.status.Failure, cancelReason)
	}
	if _, ok := cancelReasonOf(o3.child); !ok {
		t.Errorf("order-3's ShipOrder: %+v, want cancelled", o3.child)
	}

	if res.usage[nodeA].Total() == 0 || res.usage[nodeB].Total() == 0 || res.activities == 0 {
		t.Errorf("usage %v, activities %d: want requests from both nodes", res.usage, res.activities)
	}
	for _, want := range []string{"Summary", "History of order-1", "DynamoDB requests", "node-a stopped"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}
