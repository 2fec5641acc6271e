package queues

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestEncodeSignal_RoundTrip(t *testing.T) {
	t.Parallel()
	vis := time.UnixMilli(1767225600123)
	for _, sig := range []Signal{
		{Kind: Orchestrator},
		{Kind: Worker, Shard: 12},
		{Kind: Orchestrator, Shard: 3, Instance: "order-1", VisibleAt: vis},
		{Kind: Orchestrator, Instance: "a#b\x00c ✓ 🎉 \xff"},
		{Kind: Orchestrator, Instance: strings.Repeat("x", 1000)},
		{Kind: Worker, Shard: 2, Instance: "order-2", Work: "row#1", Claim: "00000001767225600123#0007"},
	} {
		body := encodeSignal(sig, "me")
		for i := 0; i < len(body); i++ {
			if c := body[i]; c < 0x20 || c > 0x7e {
				t.Fatalf("body %q has byte %#x outside printable ASCII", body, c)
			}
		}
		got, from, err := decodeSignal(body)
		if err != nil || from != "me" || got.key() != sig.key() || got.Kind != sig.Kind || got.Claim != sig.Claim {
			t.Errorf("decode(encode(%+v)) = %+v, %q, %v", sig, got, from, err)
		}
	}
}

// A message carries VisibleAt to the millisecond; a time between two
// milliseconds is rounded up, so a receiver never delivers a signal before
// its work becomes fetchable.
func TestEncodeSignal_VisibleAtRoundedUp(t *testing.T) {
	t.Parallel()
	for _, vis := range []time.Time{
		time.UnixMilli(1767225600123),
		time.UnixMilli(1767225600123).Add(time.Nanosecond),
		time.UnixMilli(1767225600123).Add(999 * time.Microsecond),
	} {
		got, _, err := decodeSignal(encodeSignal(Signal{Kind: Orchestrator, VisibleAt: vis}, ""))
		if err != nil {
			t.Fatal(err)
		}
		if d := got.VisibleAt.Sub(vis); d < 0 || d >= time.Millisecond {
			t.Errorf("VisibleAt %v decoded as %v (%v after)", vis, got.VisibleAt, d)
		}
		if got.key() != (Signal{Kind: Orchestrator, VisibleAt: vis}).key() {
			t.Errorf("VisibleAt %v: key of the decoded signal differs", vis)
		}
	}
}

func TestEncodeSignal_HugeInstanceIsDropped(t *testing.T) {
	t.Parallel()
	sig := Signal{Kind: Worker, Shard: 1, Instance: strings.Repeat("é", maxBodyBytes)}
	body := encodeSignal(sig, "")
	if len(body) > maxBodyBytes || !utf8.ValidString(body) {
		t.Fatalf("body of %d bytes", len(body))
	}
	got, _, err := decodeSignal(body)
	if err != nil || got.Instance != "" || got.Shard != 1 || got.Kind != Worker {
		t.Fatalf("decode = %+v, %v; want the signal without its instance", got, err)
	}
}

func TestDecodeSignal_Rejects(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		"", "not json", `{"v":2,"kind":"worker","shard":1}`, `{"kind":"worker"}`,
		`{"v":1,"kind":"worker","shard":-1}`, `{"v":1,"kind":"worker","instance_b64":"%%%"}`,
		`{"v":1,"kind":"worker","claim_b64":"%%%"}`,
	} {
		if sig, _, err := decodeSignal(body); err == nil {
			t.Errorf("decodeSignal(%q) = %+v, want an error", body, sig)
		}
	}
	// An unknown kind decodes (the queue decides the kind).
	if sig, _, err := decodeSignal(`{"v":1,"kind":"other","shard":2,"extra":true}`); err != nil || sig.Kind != 0 || sig.Shard != 2 {
		t.Errorf("unknown kind: %+v, %v", sig, err)
	}
}

func TestSplitBatches(t *testing.T) {
	t.Parallel()
	msg := func(n int) outgoing { return outgoing{body: strings.Repeat("b", n)} }
	var small []outgoing
	for range 21 {
		small = append(small, msg(10))
	}
	if got := splitBatches(small); len(got) != 3 || len(got[0]) != 10 || len(got[2]) != 1 {
		t.Errorf("21 small messages: %d batches", len(got))
	}
	big := []outgoing{msg(maxBodyBytes / 2), msg(maxBodyBytes / 2), msg(1), msg(maxBodyBytes)}
	got := splitBatches(big)
	if len(got) != 3 || len(got[0]) != 2 || len(got[1]) != 1 || len(got[2]) != 1 {
		t.Errorf("size-bound batches: %v", len(got))
	}
	if splitBatches(nil) != nil {
		t.Error("no messages, some batches")
	}
}

func TestKind_String(t *testing.T) {
	t.Parallel()
	for k, want := range map[Kind]string{Orchestrator: "orchestrator", Worker: "worker", 0: "Kind(0)"} {
		if k.String() != want || (k.valid() && parseKind(want) != k) {
			t.Errorf("%d: %q", int(k), k.String())
		}
	}
}
