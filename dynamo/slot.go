package dynamo

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/internal/itemsize"
	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/queues"
)

// The activity slot (docs/design.md §8, "Handed activities"): one row per
// instance, in its partition at keys.SlotSK, that holds the turn's
// claimable activity (handed or not) while it runs and then its
// completion. The worker's ack turns the one into the other with a
// single conditional UpdateItem, fenced by the
// activity's token and lease, instead of a transaction that deletes an
// activity row and puts a message; the turn that consumes the completion
// writes the next activity over it. With SQS its ready entry stays in the
// worker queue, at the lease's end, from the claim to the next turn: the
// ack changes no attribute the index holds, so it writes none.
// A fetch's range holds the slot, so a signal finds the completion; if
// the signal is lost with its process, a worker's claim at the lease's end
// finds the slot done and hands the instance to the orchestrator fetches
// (slotDoneFound).
const (
	slotRunning = "run"
	slotDone    = "done"
)

// slotRow is the slot as a fetch read it.
type slotRow struct {
	done bool
	// seq is the running activity's enqueue, or the completion's.
	seq string
	// exec and act name the running activity.
	exec, act uint64
	// entry is what the ready index holds of the slot, as read.
	entry slotEntry
}

// slotEntry is a slot's ready entry: its keys and the projected
// attributes a handed slot carries (a slot has no session and no tag).
type slotEntry struct {
	pk, sk         string
	until, visible int64
	attempts       uint64
}

// parseSlot decodes the slot row; a done slot is also a message (msg).
func parseSlot(d *decoder, row item) (*slotRow, *queueRow) {
	sl := &slotRow{done: d.str(row, attrSlot) == slotDone, seq: d.str(row, attrSeq)}
	sl.entry = slotEntry{pk: d.str(row, attrReadyPK), sk: d.str(row, attrReadySK),
		until: d.int(row, attrLockUntil), visible: d.int(row, attrVisible), attempts: d.uint(row, attrAttempts)}
	if !sl.done {
		sl.exec, sl.act = d.uint(row, attrSlotExec), d.uint(row, attrSlotAct)
		return sl, nil
	}
	// vis is still the activity's (the ack leaves it) unless an abandon's
	// delay moved it; the completion's enqueue is in its seq.
	visible := max(d.int(row, attrVisible), seqMs(sl.seq))
	return sl, &queueRow{sk: keys.SlotSK, seq: sl.seq, kind: d.str(row, attrKind), data: d.payload(row, attrItem), visible: visible}
}

// isRunningSlot reports whether row is a slot that holds an activity, not
// a message.
func isRunningSlot(row item) bool {
	state, _, _ := strAttr(row, attrSlot)
	return state == slotRunning
}

// isSlotRow reports whether row is keyed as the instance's slot.
func isSlotRow(row item) bool {
	sk, _, _ := strAttr(row, attrSK)
	return sk == keys.SlotSK
}

// messageOrder is the key a fetch orders m by: its sort key, or for the
// slot's completion the key it would have as a message of its own.
func (m queueRow) messageOrder() string {
	if m.sk == keys.SlotSK {
		return keys.MessageSK(m.visible, m.seq)
	}
	return m.sk
}

// A handed slot's ready entry (docs/design.md §8, "A handed slot's ready
// entry"): the lease end stored in a handed slot, and its entry's time, are
// set a little past the holder's lease (entrySlack), and the next activity
// handed in the slot keeps both, with the entry's visible time, while they
// still cover its own lease. The turn's put then changes nothing the ready
// index holds, and writes no index entry. The holder's lease is the one
// its fetch reports; the stored end only keeps others out a little longer.

// maxEntrySlack caps how far past the holder's lease a handed slot's
// stored lease may end: recovery after the holder dies waits that much
// longer.
const maxEntrySlack = time.Second

// entrySlack is how far past a lease of lease a new handed slot's stored
// lease ends: a quarter of the lease, at most maxEntrySlack.
func entrySlack(lease time.Duration) int64 { return durMs(min(maxEntrySlack, lease/4)) }

// handedEntry is the ready entry a slot handed with a lease until untilMs
// carries: prev's (the slot as the turn read it) when it stands for such a
// lease, in the worker queue as row's (rq_pk), else a new one. The handed
// token takes the enqueue its key holds (readySeq), which may be an
// earlier activity's.
func handedEntry(prev *slotRow, row item, untilMs int64, lease time.Duration) slotEntry {
	rowPK, _, _ := strAttr(row, attrReadyPK)
	if prev != nil {
		e := prev.entry
		if e.pk == rowPK && e.attempts == 1 && e.until >= untilMs && e.until <= untilMs+entrySlack(lease) &&
			e.sk == readySK(e.until, readySeq(e.sk)) {
			return e
		}
	}
	seq, _, _ := strAttr(row, attrSeq)
	visible, _ := intAttr(row, attrVisible)
	until := untilMs + entrySlack(lease)
	return slotEntry{pk: rowPK, sk: readySK(until, seq), until: until, visible: visible, attempts: 1}
}

// A waiting slot's ready entry (docs/design.md §8, "A waiting slot's ready
// entry"): where no fetch of the turn's process waits, the turn writes the
// slot's activity unclaimed. Written over a done slot whose entry still
// lies ahead (the lease end of the activity before, in the worker queue),
// the slot keeps that entry whole, so the put writes no index entry; its
// signal addresses the activity by its enqueue (waitingClaim), and the
// first claim keeps the entry too when its end covers the claim's lease by
// at most entrySlack, else moves it. Until that end, only the signal finds
// the activity; after it, the index does, as it finds a lease that ended.

// waitingEntry is the ready entry an unclaimed slot written as row keeps
// from prev, the done slot the turn writes over; ok is false when prev's
// entry is not in row's worker queue, counts other than one attempt, or
// has ended by nowMs.
func waitingEntry(prev *slotRow, row item, nowMs int64) (e slotEntry, ok bool) {
	if prev == nil || !prev.done {
		return e, false
	}
	rowPK, _, _ := strAttr(row, attrReadyPK)
	e = prev.entry
	return e, e.pk == rowPK && e.attempts == 1 && e.until > nowMs && e.visible > 0 &&
		e.sk == readySK(e.until, readySeq(e.sk))
}

// waitingClaim is the Claim of a waiting slot's signal: the kept entry's
// end and the activity's own enqueue, which the kept key does not hold,
// joined by '@' where a ready key has '#'.
func waitingClaim(untilMs int64, seq string) string {
	return keys.Num20(uint64(max(untilMs, 0))) + "@" + seq
}

// isWaitingClaim reports whether claim is a waitingClaim.
func isWaitingClaim(claim string) bool { return len(claim) > 21 && claim[20] == '@' }

// waitingSlot lets the unclaimed slot the turn writes keep the ready entry
// of the done slot it replaces (waitingEntry), and addresses the
// activity's signal by its enqueue. Only where signals cross processes:
// without a worker queue, other processes find the activity by sweeping,
// which would not see it until the kept entry ends.
func (p *Provider) waitingSlot(plan *turnPlan, turn *turnState, nowMs int64) {
	c := plan.claimable
	if c == nil || p.o.WorkerQueueURL == "" || !isSlotRow(plan.actions[c.action].put) {
		return
	}
	row := plan.actions[c.action].put
	e, ok := waitingEntry(turn.st.slot, row, nowMs)
	if !ok {
		return
	}
	seq, _, _ := strAttr(row, attrSeq)
	waiting := maps.Clone(row)
	waiting[attrReadySK], waiting[attrLockUntil], waiting[attrVisible], waiting[attrAttempts] = s(e.sk), n(e.until), n(e.visible), n(1)
	waiting[attrSlotWaits] = n(1)
	grown := itemsize.ItemSize(waiting) - itemsize.ItemSize(row)
	if itemsize.ItemSize(waiting) > MaxItemBytes || plan.size+grown > maxTransactBytes {
		return
	}
	plan.size += grown
	plan.actions[c.action].put = waiting
	plan.signals[c.signal].Claim = waitingClaim(e.until, seq)
}

// slotAsRead conditions a write of the slot on it being as the fetch read
// it: absent, or holding the same activity or completion.
func slotAsRead(sl *slotRow) *rowCondition {
	if sl == nil {
		return &rowCondition{expr: "attribute_not_exists(#pk)", names: map[string]string{"#pk": attrPK}}
	}
	return &rowCondition{expr: "#seq = :seq", names: map[string]string{"#seq": attrSeq}, values: map[string]types.AttributeValue{":seq": s(sl.seq)}}
}

// slotFor reports whether a turn may write its handed activity into the
// instance's slot: the slot is empty, or this turn consumes its completion.
func slotFor(turn *turnState) bool {
	sl := turn.st.slot
	if sl == nil {
		return true
	}
	if !sl.done {
		return false
	}
	for _, sk := range turn.batch {
		if sk == keys.SlotSK {
			return true
		}
	}
	return false
}

// slotItem is the slot holding activity w, unclaimed, made from its
// worker row (workerItem): same payload, enqueue and ready entry.
func slotItem(w provider.ActivityExecuteItem, row item) item {
	slot := key(keys.InstancePK(w.Instance), keys.SlotSK)
	for _, a := range []string{attrItem, attrSeq, attrVisible, attrReadyPK, attrReadySK, attrAttempts} {
		slot[a] = row[a]
	}
	slot[attrSlot] = s(slotRunning)
	slot[attrSlotExec] = nu(w.ExecutionID)
	slot[attrSlotAct] = nu(w.ID)
	return slot
}

// slotActivity puts the plan's claimable activity into the instance's slot
// in place of its worker row, when the slot is free (slotFor) and the row
// fits; the slot's consumed completion is written over, not deleted. The
// activity's signal then names the slot.
func slotActivity(plan *turnPlan, turn *turnState) {
	c := plan.claimable
	if c == nil || !slotFor(turn) {
		return
	}
	a := &plan.actions[c.action]
	slot := slotItem(c.item, a.put)
	grown := itemsize.ItemSize(slot) - itemsize.ItemSize(a.put)
	if itemsize.ItemSize(slot) > MaxItemBytes || plan.size+grown > maxTransactBytes {
		return
	}
	plan.size += grown
	a.put, a.asRead = slot, slotAsRead(turn.st.slot)
	plan.signals[c.signal].Work = keys.SlotSK
	for i, other := range plan.actions {
		if other.del != nil {
			if sk, _, _ := strAttr(other.del, attrSK); sk == keys.SlotSK {
				plan.actions = append(plan.actions[:i], plan.actions[i+1:]...)
				plan.size -= deleteActionBytes
				if i < c.action {
					c.action--
				}
				return
			}
		}
	}
}

// fillSlot puts completion (data: its JSON) into the slot tok holds: one
// UpdateItem conditioned on the token and the live lease, which turns the
// running activity into an orchestrator message. A resend after a lost
// response finds the slot filled by this token (attrAckToken): done. An
// empty ack goes the way of a worker row's (AckWorkItem).
func (p *Provider) fillSlot(ctx context.Context, tok workToken, lockToken string, completion provider.WorkItem, data []byte) error {
	if completion.TargetInstance() != tok.instance {
		return provider.Permanent(provider.OpAckWorkItem, provider.ErrInvalidInput, "the completion of an activity of instance %q names instance %q", tok.instance, completion.TargetInstance())
	}
	msg, sig, size := p.orchestratorItem(completion, data, p.nowMs())
	if size > MaxItemBytes {
		return provider.Permanent(provider.OpAckWorkItem, provider.ErrInvalidInput,
			"%s completion is %d bytes stored; it must fit one DynamoDB item (%d bytes)", completion.Kind(), size, MaxItemBytes)
	}
	names := map[string]string{"#tok": attrToken, "#until": attrLockUntil, "#sx": attrSlotExec, "#sa": attrSlotAct,
		"#slot": attrSlot, "#atok": attrAckToken}
	values := map[string]types.AttributeValue{":tok": s(lockToken), ":done": s(slotDone)}
	set := "SET #slot = :done, #atok = :tok"
	rsk, _, _ := strAttr(msg, attrReadySK)
	msg[attrSeq] = s(readySeq(rsk))
	// With SQS, not the index's attributes (vis, lock_until, att, rq_*): no
	// index write; the signal finds the completion. Without, other
	// processes find work only by sweeping: the entry moves to the
	// orchestrator queue.
	attrs := []string{attrItem, attrKind, attrSeq}
	if p.o.OrchestratorQueueURL == "" {
		attrs = append(attrs, attrReadyPK, attrReadySK)
	}
	for i, a := range attrs {
		name, value := fmt.Sprintf("#m%d", i), fmt.Sprintf(":m%d", i)
		names[name], values[value] = a, msg[a]
		set += ", " + name + " = " + value
	}
	_, err := p.resend(ackBudget(ctx), provider.OpAckWorkItem, func() error {
		vals := maps.Clone(values)
		vals[":now"] = n(p.nowMs())
		_, err := p.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: p.table, Key: workKey(tok),
			UpdateExpression:                    aws.String(set + " REMOVE #tok, #sx, #sa"),
			ConditionExpression:                 aws.String("#tok = :tok AND #until > :now"),
			ExpressionAttributeNames:            names,
			ExpressionAttributeValues:           vals,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		return err
	})
	if conditionFailed(err) {
		if done, _, _ := strAttr(failedConditionItem(err), attrAckToken); done != lockToken {
			return workLockLost(provider.OpAckWorkItem)
		}
		err = nil // an earlier attempt landed
	}
	if err != nil {
		return translate(provider.OpAckWorkItem, err)
	}
	p.leases.drop(lockToken)
	p.hints.heldWork(tokRowKey(tok), tok.seq, p.nowMs()+ackedWorkMs)
	// The signal names the slot, and its Claim the completion's enqueue, so
	// that hints tell it from the activity before it (orchFetch.stale).
	sig.Work, sig.Claim = keys.SlotSK, rsk
	p.post([]queues.Signal{sig})
	return nil
}

// isDoneSlot reports whether row, as a failed claim returned it, is a
// slot holding a completion.
func isDoneSlot(row item) bool {
	state, _, _ := strAttr(row, attrSlot)
	return state == slotDone
}

// slotDoneFound hands the instance of a slot a claim found done to the
// orchestrator fetches, here or (sent on) elsewhere: its completion's
// signal may have died with the process that acked it. This process's
// fetches pass over the index entry for ackedWorkMs.
func (p *Provider) slotDoneFound(r readyRow, row item) {
	instance, err := keys.InstanceFromPK(r.pk)
	if err != nil {
		return
	}
	p.hints.heldWork(queueRowKey(r.row), readySeq(r.readySK), p.nowMs()+ackedWorkMs)
	seq, _, _ := strAttr(row, attrSeq)
	sig := p.instanceSignal(instance)
	sig.Work, sig.Claim = keys.SlotSK, readySK(seqMs(seq), seq)
	p.post([]queues.Signal{sig})
}

// takenKey names a message a turn took (lockWaits): its sort key, and for
// the slot, which holds one completion after another, also its enqueue.
func takenKey(sk, seq string) string {
	if sk == keys.SlotSK {
		return sk + "\x00" + seq
	}
	return sk
}

// tokRowKey names in hints the row tok locks (queueRowKey).
func tokRowKey(tok workToken) string {
	if tok.slot {
		return messageRowKeyOf(tok.instance, keys.SlotSK)
	}
	return workRowKeyOf(tok.instance, keys.WorkerSK(tok.executionID, tok.activityID))
}

// tokWork is the Work a signal for the row tok locks names.
func tokWork(tok workToken) string {
	if tok.slot {
		return keys.SlotSK
	}
	return keys.WorkerSK(tok.executionID, tok.activityID)
}

// workRowPK is the partition of the worker row work of instance names.
func workRowPK(instance, work string) string {
	if work == keys.SlotSK {
		return keys.InstancePK(instance)
	}
	return keys.WorkerPK(instance)
}

// parseWorkRow names the activity of a worker-queue row; for the slot,
// executionID and activityID are 0 and slot is set.
func parseWorkRow(pk, sk string) (instance string, executionID, activityID uint64, slot bool, err error) {
	if sk == keys.SlotSK {
		instance, err = keys.InstanceFromPK(pk)
		return instance, 0, 0, true, err
	}
	instance, executionID, activityID, err = keys.ParseWorkerKey(pk, sk)
	return instance, executionID, activityID, false, err
}
