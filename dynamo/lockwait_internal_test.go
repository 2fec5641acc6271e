package dynamo

import (
	"testing"
	"time"

	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/queues"
)

// TestLockWaitsOwnTurn: a signal for an instance whose turn this process
// holds is held; the ack hands the instance back only when a signal
// announced a message newer than the turn's read (or the batch was capped).
func TestLockWaitsOwnTurn(t *testing.T) {
	var w lockWaits
	const read, until = 1_000, 31_000
	w.locked("x", "tok", read, until, false, nil)
	old := queues.Signal{Instance: "x", VisibleAt: time.UnixMilli(read - 5)}
	if !w.heldSignal(old, read+10) {
		t.Fatal("a copy of the signal the turn took was not held")
	}
	if w.released("x", "tok") {
		t.Fatal("the ack hands the instance back for a signal of what the turn took")
	}

	w.locked("x", "tok2", read, until, false, nil)
	newer := queues.Signal{Instance: "x", VisibleAt: time.UnixMilli(read + 5)}
	if !w.heldSignal(newer, read+10) {
		t.Fatal("a signal during the turn was not held")
	}
	if w.released("x", "other-token") {
		t.Fatal("another token's release handed the instance back")
	}
	if !w.released("x", "tok2") {
		t.Fatal("the ack does not hand back the instance a newer message was signalled for")
	}
	if w.heldSignal(newer, read+10) {
		t.Fatal("a signal after the release was held")
	}

	w.locked("y", "tok", read, until, true, nil)
	if !w.released("y", "tok") {
		t.Fatal("the ack of a capped batch does not hand the instance back")
	}

	w.locked("z", "tok", read, until, false, nil)
	if w.heldSignal(newer, until+1) || w.ownLocked("z", until+1) {
		t.Fatal("a turn past its lease still holds signals")
	}
	w.renewed("z", "tok", until+60_000)
	if !w.ownLocked("z", until+1) {
		t.Fatal("a renewed turn is not held")
	}
}

// TestLockWaitsOwnTurnByRow: a signal naming its message's row hands the
// instance back after the turn exactly when the turn did not take that
// row, whatever its time: a message is stamped before its write commits.
func TestLockWaitsOwnTurnByRow(t *testing.T) {
	var w lockWaits
	const read, until = 1_000, 31_000
	w.locked("x", "tok", read, until, false, []string{"#Q#1"})
	took := queues.Signal{Instance: "x", Work: "#Q#1", VisibleAt: time.UnixMilli(read + 5)}
	if !w.heldSignal(took, read+10) || w.released("x", "tok") {
		t.Fatal("a signal of a message the turn took hands the instance back")
	}
	w.locked("x", "tok2", read, until, false, []string{"#Q#1"})
	missed := queues.Signal{Instance: "x", Work: "#Q#2", VisibleAt: time.UnixMilli(read - 5)}
	if !w.heldSignal(missed, read+10) || !w.released("x", "tok2") {
		t.Fatal("a signal of a message stamped before the read that the turn did not take was dropped")
	}
}

// TestLockWaitsElsewhere: a signal for another process's turn is delivered
// once at the lease's end, however many tries found it locked; close stops
// what is pending.
func TestLockWaitsElsewhere(t *testing.T) {
	var w lockWaits
	delivered := make(chan string, 4)
	w.heldElsewhere("x", time.Millisecond, func() { delivered <- "x" })
	w.heldElsewhere("x", time.Millisecond, func() { delivered <- "x again" })
	if got := <-delivered; got != "x" {
		t.Fatalf("delivered %q", got)
	}
	w.heldElsewhere("y", time.Hour, func() { delivered <- "y" })
	w.close()
	w.heldElsewhere("z", time.Millisecond, func() { delivered <- "z" })
	select {
	case got := <-delivered:
		t.Fatalf("delivered %q after close (or twice)", got)
	case <-time.After(50 * time.Millisecond):
	}
}

// TestLockWaitsOwnTurnBySlotCompletion: the slot holds one completion
// after another under one key. A signal of the slot's next completion,
// which a fast worker can send before the turn that took the previous one
// is released here, hands the instance back; a copy of the taken one's
// signal does not.
func TestLockWaitsOwnTurnBySlotCompletion(t *testing.T) {
	var w lockWaits
	const read, until = 1_000, 31_000
	slotSignal := func(seq string) queues.Signal {
		return queues.Signal{Instance: "x", Work: keys.SlotSK, Claim: readySK(read, seq)}
	}
	w.locked("x", "tok", read, until, false, []string{takenKey(keys.SlotSK, "seq-1")})
	if !w.heldSignal(slotSignal("seq-1"), read+10) || w.released("x", "tok") {
		t.Fatal("a copy of the taken completion's signal handed the instance back")
	}
	w.locked("x", "tok", read, until, false, []string{takenKey(keys.SlotSK, "seq-1")})
	if !w.heldSignal(slotSignal("seq-2"), read+10) || !w.released("x", "tok") {
		t.Fatal("the signal of the slot's next completion did not hand the instance back")
	}
}
