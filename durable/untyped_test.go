package durable

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
)

// A typed call of an activity registered with ActivityFunc used to hand the
// activity its input JSON-encoded (the string "hello" arrived as "\"hello\"")
// and to decode its plain result as JSON. The call now fails with an
// *UntypedActivityError before the activity is scheduled.
func TestTypedCallOfUntypedActivity(t *testing.T) {
	var runs atomic.Int32
	echo := ActivityFunc("Echo", func(_ context.Context, in string) (string, error) {
		runs.Add(1)
		return "echo:" + in, nil
	})
	typed := OrchestrationFunc("TypedCall", func(ctx *OrchestrationContext, _ string) (string, error) {
		out, err := CallActivity[string](ctx, "Echo", "hello").Get(ctx)
		var ue *UntypedActivityError
		if errors.As(err, &ue) {
			return fmt.Sprintf("untyped %s: %s to %s", ue.Name, ue.Input, ue.Output), nil
		}
		return "", fmt.Errorf("got %q, %v; want an *UntypedActivityError", out, err)
	})
	typedOut := OrchestrationFunc("TypedOutput", func(ctx *OrchestrationContext, _ string) (string, error) {
		_, err := CallActivity[string](ctx, "Echo", Raw("hello")).Get(ctx)
		var ue *UntypedActivityError
		if errors.As(err, &ue) {
			return fmt.Sprintf("untyped %s: %s to %s", ue.Name, ue.Input, ue.Output), nil
		}
		return "", fmt.Errorf("got %v; want an *UntypedActivityError", err)
	})
	raw := OrchestrationFunc("RawCall", func(ctx *OrchestrationContext, _ string) (string, error) {
		out, err := CallActivity[Raw](ctx, "Echo", Raw("hello")).Get(ctx)
		return string(out), err
	})
	_, c, _ := utServe(t, echo, typed, typedOut, raw)
	for _, tc := range []struct{ orch, want string }{
		{"TypedCall", "untyped Echo: string to string"},
		{"TypedOutput", "untyped Echo: durable.Raw to string"},
		{"RawCall", "echo:hello"},
	} {
		if err := c.StartOrchestration(utCtx(t), "untyped-"+tc.orch, tc.orch, Raw("")); err != nil {
			t.Fatal(err)
		}
		if out := utCompleted(t, c, "untyped-"+tc.orch); out != tc.want {
			t.Errorf("%s: output %q; want %q", tc.orch, out, tc.want)
		}
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the activity ran %d times; want once, for the raw call only", n)
	}
}
