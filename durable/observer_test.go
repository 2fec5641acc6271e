package durable

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/duradyn/duradyn/provider/memprovider"
)

// recorder is an Observer that keeps what it is told.
type recorder struct {
	mu                sync.Mutex
	turns             []TurnEvent
	started, finished []ActivityEvent
}

func (r *recorder) TurnCommitted(e TurnEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.turns = append(r.turns, e)
}

func (r *recorder) ActivityStarted(e ActivityEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.started = append(r.started, e)
}

func (r *recorder) ActivityFinished(e ActivityEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.finished = append(r.finished, e)
}

// The observer hears of every committed turn and of every activity run,
// with the instance, execution, attempt and worker.
func TestObserver(t *testing.T) {
	ok := NewActivity("Ok", func(context.Context, string) (string, error) { return "fine", nil })
	bad := NewActivity("Bad", func(context.Context, string) (string, error) { return "", errors.New("out of stock") })
	orch := NewOrchestration("Order", func(ctx *OrchestrationContext, in string) (string, error) {
		if _, err := ok.Call(ctx, in).Get(ctx); err != nil {
			return "", err
		}
		return bad.Call(ctx, in).Get(ctx)
	}, Version("2.0.0"))
	reg, err := NewRegistry(ok, bad, orch)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	rt := utStart(t, memprovider.New(), reg, utQuick, func(o *Options) {
		o.RuntimeID = "rt-obs"
		o.Observer = rec
	})
	if err := rt.Client().StartOrchestration(utCtx(t), "order-1", "Order", "x"); err != nil {
		t.Fatal(err)
	}
	if st := utWait(t, rt.Client(), "order-1"); st.State != StateFailed {
		t.Fatalf("state %v; want Failed", st.State)
	}
	utShutdown(t, rt) // every call to the observer is made by then
	rec.mu.Lock()
	defer rec.mu.Unlock()

	wantTurns := []struct {
		outcome string
		resumed bool
	}{{"continue", false}, {"continue", true}, {"failed", true}}
	if len(rec.turns) != len(wantTurns) {
		t.Fatalf("turns %+v; want %d", rec.turns, len(wantTurns))
	}
	for i, e := range rec.turns {
		if e.Instance != "order-1" || e.ExecutionID != 1 || e.Orchestration != "Order" || e.Version != "2.0.0" ||
			e.Attempt != 1 || e.RuntimeID != "rt-obs" || e.Outcome != wantTurns[i].outcome || e.Resumed != wantTurns[i].resumed {
			t.Errorf("turn %d: %+v; want outcome %s, resumed %v", i+1, e, wantTurns[i].outcome, wantTurns[i].resumed)
		}
	}
	var failure *FailureError
	if last := rec.turns[len(rec.turns)-1]; !errors.As(last.Err, &failure) || failure.Instance != "order-1" || !strings.Contains(failure.Error(), "out of stock") {
		t.Errorf("failed turn's Err %v; want a *FailureError for out of stock", last.Err)
	}
	if rec.turns[0].Err != nil {
		t.Errorf("a turn that continues has Err %v", rec.turns[0].Err)
	}

	if len(rec.started) != 2 || len(rec.finished) != 2 {
		t.Fatalf("%d activities started and %d finished; want 2 and 2", len(rec.started), len(rec.finished))
	}
	// Ok's completion is acknowledged before Bad is scheduled, so they
	// start in order; a finish is reported after its acknowledgement,
	// which may come after Bad ran, so finishes are matched by id.
	finished := map[uint64]ActivityEvent{}
	for _, f := range rec.finished {
		finished[f.Activity.ID] = f
	}
	for i, want := range []struct{ name, outcome, err string }{{"Ok", "completed", ""}, {"Bad", "failed", "out of stock"}} {
		s := rec.started[i]
		f, found := finished[s.Activity.ID]
		if !found {
			t.Fatalf("activity %s (id %d) started but no finish was reported for it: %+v", want.name, s.Activity.ID, rec.finished)
		}
		a := f.Activity
		if s.Activity.Name != want.name || a.Name != want.name || a.ID != s.Activity.ID || a.Instance != "order-1" || a.ExecutionID != 1 ||
			a.Attempt != 1 || !strings.HasPrefix(a.WorkerID, "work-") || !strings.HasSuffix(a.WorkerID, "-rt-obs") {
			t.Errorf("activity %d: started %+v, finished %+v", i+1, s.Activity, a)
		}
		if s.Outcome != "" || f.Outcome != want.outcome || f.Duration < 0 {
			t.Errorf("activity %s: started outcome %q, finished %q after %v; want %q", want.name, s.Outcome, f.Outcome, f.Duration, want.outcome)
		}
		if (want.err == "") != (f.Err == nil) || (f.Err != nil && f.Err.Error() != want.err) {
			t.Errorf("activity %s: Err %v; want %q", want.name, f.Err, want.err)
		}
	}
}
