package faults_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/smithy-go"

	"github.com/duradyn/duradyn/internal/faults"
)

func TestGate_Wait(t *testing.T) {
	t.Parallel()
	in := faults.New(1)
	db := in.DynamoDB(&stubDB{})
	g := faults.NewGate()
	in.Add(faults.Rule{Rate: 1, Fault: faults.Hold(g)})
	errs := make(chan error, 3)
	for range 3 {
		go func() { errs <- getItem(t.Context(), db) }()
	}
	if err := g.Wait(t.Context(), 3); err != nil {
		t.Fatal(err)
	}
	if n := g.Arrivals(); n != 3 {
		t.Errorf("arrivals %d", n)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := g.Wait(ctx, 4); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait for a fourth: %v", err)
	}
	g.Release()
	g.Release()
	for range 3 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if err := getItem(t.Context(), db); err != nil { // an open gate lets requests pass
		t.Error(err)
	}
}

func TestRule_Count(t *testing.T) {
	t.Parallel()
	in := faults.New(7)
	stub := &stubDB{}
	db := in.DynamoDB(stub)
	in.Add(faults.Rule{Ops: []string{faults.OpGetItem}, Rate: 1, Count: 3, Fault: faults.Throttle("")})
	var failed []int
	for i := range 10 {
		if getItem(t.Context(), db) != nil {
			failed = append(failed, i)
		}
	}
	if len(failed) != 3 || failed[2] != 2 {
		t.Errorf("failed requests %v, want the first three", failed)
	}
	if n := stub.gets.Load(); n != 7 {
		t.Errorf("%d requests reached the service, want 7", n)
	}
}

func TestRule_CountConcurrent(t *testing.T) {
	t.Parallel()
	in := faults.New(7)
	db := in.DynamoDB(&stubDB{})
	in.Add(faults.Rule{Rate: 0.5, Count: 5, Fault: faults.ServerError("")})
	errs := make(chan error, 100)
	for range 100 {
		go func() { errs <- getItem(t.Context(), db) }()
	}
	n := 0
	for range 100 {
		if <-errs != nil {
			n++
		}
	}
	if n != 5 {
		t.Errorf("%d failures, want Count = 5", n)
	}
}

// TestRule_Rate checks that a seed makes the choices reproducible and that
// the rate is roughly honoured.
func TestRule_Rate(t *testing.T) {
	t.Parallel()
	pattern := func(seed int64) []bool {
		in := faults.New(seed)
		db := in.DynamoDB(&stubDB{})
		in.Add(faults.Rule{Rate: 0.3, Fault: faults.Throttle("")})
		out := make([]bool, 1000)
		for i := range out {
			out[i] = getItem(t.Context(), db) != nil
		}
		return out
	}
	a, b, c := pattern(42), pattern(42), pattern(43)
	n, same := 0, true
	for i := range a {
		if a[i] {
			n++
		}
		same = same && a[i] == c[i]
		if a[i] != b[i] {
			t.Fatalf("seed 42 gave different choices at request %d", i)
		}
	}
	if n < 200 || n > 400 {
		t.Errorf("%d of 1000 requests failed at rate 0.3", n)
	}
	if same {
		t.Error("seeds 42 and 43 gave the same choices")
	}
}

func TestRule_OrderAndRemove(t *testing.T) {
	t.Parallel()
	in := faults.New(1)
	db := in.DynamoDB(&stubDB{})
	removeFirst := in.Add(faults.Rule{Rate: 1, Count: 1, Fault: faults.Throttle("")})
	in.Add(faults.Rule{Ops: []string{faults.OpGetItem}, Rate: 1, Fault: faults.ServerError("")})
	code := func() string {
		var api smithy.APIError
		if err := getItem(t.Context(), db); errors.As(err, &api) {
			return api.ErrorCode()
		}
		return ""
	}
	if c := code(); c != "ProvisionedThroughputExceededException" {
		t.Errorf("first request: %q, want the first rule's fault", c)
	}
	if c := code(); c != "InternalServerError" {
		t.Errorf("second request: %q, want the second rule once the first is spent", c)
	}
	removeFirst()
	removeFirst()
	in.SetEnabled(false)
	if c := code(); c != "" {
		t.Errorf("disabled: %q, want no fault", c)
	}
	in.SetEnabled(true)
	if c := code(); c != "InternalServerError" {
		t.Errorf("re-enabled: %q", c)
	}
	st := in.Stats()
	if st.Requests != 3 || st.Ops[faults.OpGetItem].Requests != 3 {
		t.Errorf("requests %d (GetItem %d), want 3: disabled requests are not counted", st.Requests, st.Ops[faults.OpGetItem].Requests)
	}
	if st.Faults[faults.KindThrottle] != 1 || st.Faults[faults.KindServerError] != 2 {
		t.Errorf("faults %v", st.Faults)
	}
	want := "requests 3 (GetItem 3); throttle 1 (GetItem 1); server error 2 (GetItem 2)"
	if s := st.String(); s != want {
		t.Errorf("String() = %q, want %q", s, want)
	}
}

func TestInjector_AddPanics(t *testing.T) {
	t.Parallel()
	for name, r := range map[string]faults.Rule{
		"unknown op":            {Ops: []string{"DescribeTable"}, Rate: 1, Fault: faults.Throttle("")},
		"zero rate":             {Fault: faults.Throttle("")},
		"rate above one":        {Rate: 1.5, Fault: faults.Throttle("")},
		"negative count":        {Rate: 1, Count: -1, Fault: faults.Throttle("")},
		"no fault":              {Rate: 1},
		"unknown throttle code": {Rate: 1, Fault: faults.Throttle("SlowDown")},
		"unknown server code":   {Rate: 1, Fault: faults.ServerError("BadGateway")},
		"cancel on any op":      {Rate: 1, Fault: faults.TransactionCanceled("TransactionConflict", 0)},
		"cancel on PutItem":     {Ops: []string{faults.OpPutItem}, Rate: 1, Fault: faults.TransactionCanceled("TransactionConflict", 0)},
		"unknown reason":        {Ops: []string{faults.OpTransactWriteItems}, Rate: 1, Fault: faults.TransactionCanceled("ConditionalCheckFailed", 0)},
		"duplicate on Query":    {Ops: []string{faults.OpQuery}, Rate: 1, Fault: faults.Duplicate()},
		"nil gate":              {Rate: 1, Fault: faults.Hold(nil)},
		"negative delay":        {Rate: 1, Fault: faults.Delay(-time.Second)},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("Add(%+v) did not panic", r)
				}
			}()
			faults.New(1).Add(r)
		})
	}
}

func TestClock(t *testing.T) {
	t.Parallel()
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	c := faults.NewFakeClock(start)
	if first, second := c.Now(), c.Now(); !first.Equal(start) || !second.Equal(start) {
		t.Fatalf("a fake clock moved by itself: %v, then %v", first, second)
	}
	c.Advance(16 * time.Minute)
	if got := c.Now().Sub(start); got != 16*time.Minute {
		t.Errorf("advanced by %v", got)
	}
	c.SetOffset(-time.Second)
	if got := c.Now().Sub(start); got != -time.Second {
		t.Errorf("offset %v", got)
	}
	skewed := faults.NewClock(func() time.Time { return start }, 3*time.Second)
	if got := skewed.Now().Sub(start); got != 3*time.Second {
		t.Errorf("skew %v", got)
	}
	if faults.NewClock(nil, 0).Now().IsZero() {
		t.Error("a clock on time.Now reads zero")
	}
}
