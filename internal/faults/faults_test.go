package faults_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/duradyn/duradyn/internal/faults"
)

func TestThrottle(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, tc := range []struct {
		code, want string
		as         func(error) bool
	}{
		{"", "ProvisionedThroughputExceededException", func(err error) bool {
			var e *types.ProvisionedThroughputExceededException
			return errors.As(err, &e)
		}},
		{"ThrottlingException", "ThrottlingException", func(err error) bool {
			var e *types.ThrottlingException
			return errors.As(err, &e)
		}},
		{"RequestLimitExceeded", "RequestLimitExceeded", func(err error) bool {
			var e *types.RequestLimitExceeded
			return errors.As(err, &e)
		}},
	} {
		t.Run(tc.want, func(t *testing.T) {
			remove := f.in.Add(faults.Rule{Ops: []string{faults.OpPutItem}, Rate: 1, Fault: faults.Throttle(tc.code)})
			defer remove()
			err := f.put(t, f.db, row("throttle", tc.want))
			if code := wantOpError(t, err, "DynamoDB", "PutItem"); code != tc.want {
				t.Errorf("code %q, want %q", code, tc.want)
			}
			if !tc.as(err) {
				t.Errorf("error %v is not the SDK's modelled type for %s", err, tc.want)
			}
			wantExhausted(t, err, http.StatusBadRequest)
			if it := f.get(t, "throttle", tc.want); it != nil {
				t.Errorf("throttled write applied: %v", it)
			}
		})
	}
}

func TestServerError(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	t.Run("InternalServerError", func(t *testing.T) {
		remove := f.in.Add(faults.Rule{Ops: []string{faults.OpGetItem}, Rate: 1, Count: 1, Fault: faults.ServerError("")})
		defer remove()
		err := getItem(t.Context(), f.db)
		if code := wantOpError(t, err, "DynamoDB", "GetItem"); code != "InternalServerError" {
			t.Errorf("code %q", code)
		}
		var ise *types.InternalServerError
		if !errors.As(err, &ise) || ise.ErrorFault() != smithy.FaultServer {
			t.Errorf("error %v is not a server-fault *types.InternalServerError", err)
		}
		wantExhausted(t, err, http.StatusInternalServerError)
	})
	t.Run("ServiceUnavailable", func(t *testing.T) {
		remove := f.in.Add(faults.Rule{Ops: []string{faults.OpPutItem}, Rate: 1, Count: 1, Fault: faults.ServerError("ServiceUnavailable")})
		defer remove()
		err := f.put(t, f.db, row("unavailable", "1"))
		if code := wantOpError(t, err, "DynamoDB", "PutItem"); code != "ServiceUnavailable" {
			t.Errorf("code %q", code)
		}
		var ge *smithy.GenericAPIError
		if !errors.As(err, &ge) || ge.ErrorFault() != smithy.FaultServer {
			t.Errorf("error %v is not a server-fault *smithy.GenericAPIError", err)
		}
		wantExhausted(t, err, http.StatusServiceUnavailable)
		if f.get(t, "unavailable", "1") != nil {
			t.Error("failed write applied")
		}
	})
}

// transaction puts one row per sort key in partition pk.
func (f *fixture) transaction(pk string, sks ...string) *dynamodb.TransactWriteItemsInput {
	in := &dynamodb.TransactWriteItemsInput{}
	for _, sk := range sks {
		in.TransactItems = append(in.TransactItems, types.TransactWriteItem{Put: &types.Put{
			TableName: aws.String(f.env.Table), Item: row(pk, sk, "v", "1"),
		}})
	}
	return in
}

func reasons(t *testing.T, err error) []string {
	t.Helper()
	var tc *types.TransactionCanceledException
	if !errors.As(err, &tc) {
		t.Fatalf("error %v is not a *types.TransactionCanceledException", err)
	}
	var codes []string
	for _, r := range tc.CancellationReasons {
		codes = append(codes, aws.ToString(r.Code))
	}
	return codes
}

func TestTransactionCanceled(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	t.Run("AtIndex", func(t *testing.T) {
		remove := f.in.Add(faults.Rule{Ops: []string{faults.OpTransactWriteItems}, Rate: 1, Count: 1,
			Fault: faults.TransactionCanceled("TransactionConflict", 1)})
		defer remove()
		_, err := f.db.TransactWriteItems(t.Context(), f.transaction("tx", "a", "b", "c"))
		wantOpError(t, err, "DynamoDB", "TransactWriteItems")
		if got, want := reasons(t, err), []string{"None", "TransactionConflict", "None"}; !equal(got, want) {
			t.Errorf("reasons %v, want %v", got, want)
		}
		for _, sk := range []string{"a", "b", "c"} {
			if f.get(t, "tx", sk) != nil {
				t.Errorf("cancelled transaction wrote tx/%s", sk)
			}
		}
		var mae *retry.MaxAttemptsError
		if errors.As(err, &mae) {
			t.Error("the SDK does not retry a cancelled transaction, but the error says it did")
		}
	})
	t.Run("Random", func(t *testing.T) {
		remove := f.in.Add(faults.Rule{Ops: []string{faults.OpTransactWriteItems}, Rate: 1, Count: 1,
			Fault: faults.TransactionCanceled("ThrottlingError", -1)})
		defer remove()
		_, err := f.db.TransactWriteItems(t.Context(), f.transaction("txr", "a", "b", "c", "d"))
		got := reasons(t, err)
		n := 0
		for _, c := range got {
			switch c {
			case "ThrottlingError":
				n++
			case "None":
			default:
				t.Errorf("reason %q", c)
			}
		}
		if len(got) != 4 || n != 1 {
			t.Errorf("reasons %v, want four with one ThrottlingError", got)
		}
	})
	t.Run("IndexOutOfRange", func(t *testing.T) {
		remove := f.in.Add(faults.Rule{Ops: []string{faults.OpTransactWriteItems}, Rate: 1, Count: 1,
			Fault: faults.TransactionCanceled("TransactionConflict", 5)})
		defer remove()
		_, err := f.db.TransactWriteItems(t.Context(), f.transaction("txo", "a"))
		if err == nil || errors.As(err, new(*types.TransactionCanceledException)) {
			t.Errorf("error %v, want one naming the bad index", err)
		}
	})
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// wantTimeout checks the error of TimeoutBefore and LostResponse.
func wantTimeout(t *testing.T, err error, op, netOp string) {
	t.Helper()
	if code := wantOpError(t, err, "DynamoDB", op); code != "" {
		t.Errorf("timeout has API error code %q", code)
	}
	wantExhausted(t, err, 0)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("error %v has no net.Error with Timeout()", err)
	}
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != netOp {
		t.Errorf("error %v: want a %s *net.OpError", err, netOp)
	}
	if !retry.NewStandard().IsErrorRetryable(err) {
		t.Errorf("the SDK's retryer does not retry %v", err)
	}
}

func TestTimeoutBefore(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.in.Add(faults.Rule{Ops: []string{faults.OpPutItem}, Rate: 1, Count: 1, Fault: faults.TimeoutBefore()})
	err := f.put(t, f.db, row("timeout", "1"))
	wantTimeout(t, err, "PutItem", "dial")
	if f.get(t, "timeout", "1") != nil {
		t.Error("the request was sent")
	}
}

func TestLostResponse(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.in.Add(faults.Rule{Ops: []string{faults.OpPutItem}, Rate: 1, Count: 1, Fault: faults.LostResponse()})
	err := f.put(t, f.db, row("lost", "1", "v", "landed"))
	wantTimeout(t, err, "PutItem", "read")
	if got := attr(f.get(t, "lost", "1"), "v"); got != "landed" {
		t.Errorf("the write was not applied (v = %q)", got)
	}
}

func TestResend(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.in.Add(faults.Rule{Ops: []string{faults.OpPutItem}, Rate: 1, Count: 1, Fault: faults.Resend()})
	_, err := f.db.PutItem(t.Context(), &dynamodb.PutItemInput{
		TableName: aws.String(f.env.Table), Item: row("resend", "1", "v", "first"),
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	})
	var cf *types.ConditionalCheckFailedException
	if !errors.As(err, &cf) {
		t.Fatalf("error %v: the second attempt should fail its condition", err)
	}
	if got := attr(f.get(t, "resend", "1"), "v"); got != "first" {
		t.Errorf("the first attempt was not applied (v = %q)", got)
	}
	if n := f.in.Stats().Ops[faults.OpPutItem].Faults[faults.KindResend]; n != 1 {
		t.Errorf("resends counted %d", n)
	}
}

func TestDelay(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	t.Run("Sent", func(t *testing.T) {
		remove := f.in.Add(faults.Rule{Ops: []string{faults.OpPutItem}, Rate: 1, Count: 1, Fault: faults.Delay(time.Millisecond)})
		defer remove()
		if err := f.put(t, f.db, row("delay", "1")); err != nil {
			t.Fatal(err)
		}
		if f.get(t, "delay", "1") == nil {
			t.Error("the delayed write was not applied")
		}
	})
	t.Run("ContextEnds", func(t *testing.T) {
		remove := f.in.Add(faults.Rule{Ops: []string{faults.OpPutItem}, Rate: 1, Count: 1, Fault: faults.Delay(time.Hour)})
		defer remove()
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		before := f.in.Stats().Faults[faults.KindDelay]
		go func() {
			_, err := f.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(f.env.Table), Item: row("delay", "2")})
			done <- err
		}()
		await(t, "the request to be delayed", func() bool { return f.in.Stats().Faults[faults.KindDelay] > before })
		cancel()
		err := <-done
		var ce *smithy.CanceledError
		if !errors.Is(err, context.Canceled) || !errors.As(err, &ce) {
			t.Errorf("error %v, want the SDK's cancellation", err)
		}
		if f.get(t, "delay", "2") != nil {
			t.Error("a request cancelled during its delay was sent")
		}
	})
}

// TestHold reorders two writes of one item with a gate: the first is held
// before sending while the second lands, so the first one wins.
func TestHold(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	g := faults.NewGate()
	f.in.Add(faults.Rule{
		Ops: []string{faults.OpPutItem}, Rate: 1, Fault: faults.Hold(g),
		Match: func(r faults.Request) bool { return attr(r.Input.(*dynamodb.PutItemInput).Item, "v") == "held" },
	})
	done := make(chan error, 1)
	go func() { done <- f.put(t, f.db, row("hold", "1", "v", "held")) }()
	<-g.Arrived()
	if err := f.put(t, f.db, row("hold", "1", "v", "overtaking")); err != nil {
		t.Fatal(err)
	}
	if got := attr(f.get(t, "hold", "1"), "v"); got != "overtaking" {
		t.Fatalf("v = %q before release: the held write was sent", got)
	}
	g.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := attr(f.get(t, "hold", "1"), "v"); got != "held" {
		t.Errorf("v = %q, want the held write last", got)
	}

	t.Run("ContextEnds", func(t *testing.T) {
		g := faults.NewGate()
		remove := f.in.Add(faults.Rule{Ops: []string{faults.OpPutItem}, Rate: 1, Count: 1, Fault: faults.Hold(g)})
		defer remove()
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() {
			_, err := f.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(f.env.Table), Item: row("hold", "2")})
			done <- err
		}()
		if err := g.Wait(t.Context(), 1); err != nil {
			t.Fatal(err)
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("error %v, want the SDK's cancellation", err)
		}
		if f.get(t, "hold", "2") != nil {
			t.Error("a request cancelled at the gate was sent")
		}
	})
}

// TestHoldResponse shows a write that landed while its caller does not
// know yet.
func TestHoldResponse(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	g := faults.NewGate()
	f.in.Add(faults.Rule{Ops: []string{faults.OpPutItem}, Rate: 1, Count: 1, Fault: faults.HoldResponse(g)})
	done := make(chan error, 1)
	go func() { done <- f.put(t, f.db, row("held", "1", "v", "landed")) }()
	<-g.Arrived()
	if got := attr(f.get(t, "held", "1"), "v"); got != "landed" {
		t.Errorf("v = %q: the write is not applied while its response is held", got)
	}
	select {
	case err := <-done:
		t.Fatalf("the call returned (%v) before the release", err)
	default:
	}
	g.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := f.in.Stats().Faults[faults.KindHoldResponse]; n != 1 {
		t.Errorf("held responses counted %d", n)
	}
}
