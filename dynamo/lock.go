package dynamo

import (
	"context"
	"maps"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/provider"
)

// Every write of an instance's lock row (#LOCK) is in this file or builds
// its expression here. Fencing (docs/design.md §6): every write moves ver
// on; a steal is conditioned on the version read, no pending large turn
// and a lease over by its clock; every holder write on its token, and a
// release also on no pending large turn.

// stealCondition is the condition of a fetch's lock write: same version,
// no pending large turn, lease over at nowMs or held by own (a lock this
// process kept, when not ""); or no row yet.
func (st *instanceState) stealCondition(nowMs int64, own string) (cond *string, names map[string]string, values map[string]types.AttributeValue) {
	if !st.lock.exists {
		return aws.String("attribute_not_exists(#pk)"), map[string]string{"#pk": attrPK}, nil
	}
	names = map[string]string{"#ver": attrLockVer, "#turn": attrTurn, "#tok": attrToken, "#until": attrLockUntil}
	values = map[string]types.AttributeValue{":ver": nu(st.lock.ver), ":now": n(nowMs)}
	free := "attribute_not_exists(#tok) OR #until <= :now"
	if own != "" {
		free += " OR #tok = :own"
		values[":own"] = s(own)
	}
	return aws.String("#ver = :ver AND attribute_not_exists(#turn) AND (" + free + ")"), names, values
}

// lockAsRead is the condition that the lock row is still as st read it.
func (st *instanceState) lockAsRead() (cond *string, names map[string]string, values map[string]types.AttributeValue) {
	if st.lock.exists {
		return aws.String("#ver = :ver"), map[string]string{"#ver": attrLockVer}, map[string]types.AttributeValue{":ver": nu(st.lock.ver)}
	}
	return aws.String("attribute_not_exists(#pk)"), map[string]string{"#pk": attrPK}, nil
}

// turnAttempts returns the attempt map before a turn of batch (without
// the counts of messages known gone) and with batch's counted, and batch's
// sort keys.
func turnAttempts(st *instanceState, batch []queueRow) (before, attempts map[string]uint32, sks []string) {
	before = map[string]uint32{}
	for _, m := range st.msgs {
		if a, ok := st.lock.attempts[m.sk]; ok {
			before[m.sk] = a
		}
	}
	if st.msgsReadTo != "" {
		// Messages past the rows read are not known gone: keep their counts.
		for sk, a := range st.lock.attempts {
			if sk > st.msgsReadTo {
				before[sk] = a
			}
		}
	}
	attempts = maps.Clone(before)
	sks = make([]string, len(batch))
	for i, m := range batch {
		attempts[m.sk]++
		sks[i] = m.sk
	}
	return before, attempts, sks
}

// lockTurn wins the instance lock for batch: one conditional PutItem
// (stealCondition), or none when the row holds a lock this process kept
// with at least a quarter of lockTimeout left (kept.go). A lock that comes
// back with less than a quarter of its lease left is released, reported as
// nil and its instance signalled to this process (docs/design.md §6).
func (p *Provider) lockTurn(ctx context.Context, st *instanceState, batch []queueRow, lockTimeout time.Duration) (*turnState, error) {
	before, attempts, sks := turnAttempts(st, batch)
	kept, own := p.kept.take(st.id, st.lock)
	if own && usefulLease(kept.until, p.nowMs(), lockTimeout) {
		if ctx.Err() != nil {
			p.kept.put(st.id, kept, p.nowMs())
			return nil, ctx.Err()
		}
		// The row as read holds the kept token: its version is current.
		return &turnState{token: kept.token, st: st, ver: st.lock.ver, until: kept.until, lease: lockTimeout, kept: true,
			batch: sks, attempts: attempts, undelivered: before}, nil
	}
	ver := st.lock.ver + 1
	token := newOrchToken(orchToken{instance: st.id, ver: ver})
	start := p.nowMs()
	until := start + durMs(lockTimeout)
	row := lockItem(st.id, ver, attempts)
	row[attrToken] = s(token)
	row[attrLockUntil] = n(until)
	row[attrBatch] = stringList(sks)
	// The last turn's records survive a fetch: turnDone and smallDone tell
	// a late or retried ack that its turn is in; histMark keeps histories
	// cached before an append unused.
	if st.lock.turnDone != "" {
		row[attrTurnDone] = s(st.lock.turnDone)
	}
	if st.lock.smallDone != "" {
		row[attrSmallDone] = s(st.lock.smallDone)
	}
	if len(st.lock.smallPast) > 0 {
		row[attrSmallPast] = s(strings.Join(st.lock.smallPast, ","))
	}
	if st.lock.histMark != "" {
		row[attrHistMark] = s(st.lock.histMark)
	}
	if st.lock.updatedAt != 0 {
		row[attrUpdatedAt] = n(st.lock.updatedAt)
	}
	if st.lock.kvDigest != "" {
		row[attrKVDigest] = s(st.lock.kvDigest)
	}
	if e := st.lock.histEnd; e != nil {
		row[attrHistExec], row[attrHistLen] = nu(e.exec), nu(e.events)
	}
	in := &dynamodb.PutItemInput{TableName: p.table, Item: row,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}
	in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues = st.stealCondition(start, kept.token)
	if _, err := p.db.PutItem(underClaim(ctx, start+durMs(claimBudget(lockTimeout))), in); err != nil && heldItem(err, token) == nil {
		if conditionFailed(err) {
			return nil, nil // another dispatcher won, or the lock is live after all
		}
		// An unknown outcome: the row tells whether the write landed.
		if held, rerr := p.heldBy(ctx, key(keys.InstancePK(st.id), keys.Lock), token); rerr != nil || !held {
			return nil, err
		}
	}
	turn := &turnState{token: token, st: st, ver: ver, until: until, lease: lockTimeout, batch: sks, attempts: attempts, undelivered: before}
	if ctx.Err() != nil {
		// The claim landed but the caller is gone: hand the instance back.
		p.releaseUndelivered(st.id, turn)
		return nil, ctx.Err()
	}
	if !usefulLease(until, p.nowMs(), lockTimeout) {
		p.o.Logger.Warn("dynamo: instance lock came back with less than a quarter of its lease left; released", "instance", st.id, "lock_timeout", lockTimeout)
		p.releaseUndelivered(st.id, turn)
		// The batch is free again: this process's fetches take it now,
		// as an abandoned activity's are told, not at the next sweep.
		p.signals.Requeue(p.instanceSignal(st.id))
		return nil, nil
	}
	return turn, nil
}

// heldBy reports, by a consistent read, whether the row at k holds token:
// whether a write whose response was lost landed. It reads even when ctx
// was cancelled, so that a claim that landed is found and released.
func (p *Provider) heldBy(ctx context.Context, k item, token string) (bool, error) {
	ctx, cancel := context.WithTimeout(underLease(context.WithoutCancel(ctx), 0), unknownOutcomeReadTimeout)
	defer cancel()
	out, err := p.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: p.table, Key: k, ConsistentRead: aws.Bool(true),
		ProjectionExpression: aws.String("#tok"), ExpressionAttributeNames: map[string]string{"#tok": attrToken},
	})
	if err != nil {
		return false, err
	}
	held, _, _ := strAttr(out.Item, attrToken)
	return held == token, nil
}

// unknownOutcomeReadTimeout bounds heldBy's read after ctx ended.
const unknownOutcomeReadTimeout = 5 * time.Second

// lockItem is a lock row at version ver holding no lock.
func lockItem(instance string, ver uint64, attempts map[string]uint32) item {
	row := key(keys.InstancePK(instance), keys.Lock)
	row[attrLockVer] = nu(ver)
	row[attrAttempts] = attemptsAttr(attempts)
	return row
}

func attemptsAttr(attempts map[string]uint32) types.AttributeValue {
	att := make(map[string]types.AttributeValue, len(attempts))
	for sk, a := range attempts {
		att[sk] = nu(uint64(a))
	}
	return &types.AttributeValueMemberM{Value: att}
}

func stringList(values []string) types.AttributeValue {
	l := make([]types.AttributeValue, len(values))
	for i, v := range values {
		l[i] = s(v)
	}
	return &types.AttributeValueMemberL{Value: l}
}

// lockRelease is an update that gives up the lock and moves ver on.
// largeDone or smallDone (smallTurnID) records the turn it finishes; the
// record it does not set stays, for a late ack or roll-forward of that
// turn.
type lockRelease struct {
	expr   string
	names  map[string]string
	values map[string]types.AttributeValue
}

func newLockRelease(attempts map[string]uint32, largeDone, smallDone string) lockRelease {
	r := lockRelease{
		names: map[string]string{
			"#att": attrAttempts, "#ver": attrLockVer, "#tok": attrToken, "#until": attrLockUntil,
			"#batch": attrBatch, "#turn": attrTurn, "#texec": attrTurnExec,
		},
		values: map[string]types.AttributeValue{":att": attemptsAttr(attempts), ":one": n(1)},
	}
	set := "SET #att = :att"
	if largeDone != "" {
		set += ", #tdone = :tdone"
		r.names["#tdone"], r.values[":tdone"] = attrTurnDone, s(largeDone)
	}
	if smallDone != "" {
		set += ", #sdone = :sdone"
		r.names["#sdone"], r.values[":sdone"] = attrSmallDone, s(smallDone)
	}
	r.expr = set + " ADD #ver :one REMOVE #tok, #until, #batch, #turn, #texec"
	return r
}

// withSmallPast pushes the small-turn record the fetch read onto spast, so
// that a cache ending at one of those turns reads only the rows after it
// (docs/reads.md, history cache).
func (r lockRelease) withSmallPast(read lockRow) lockRelease {
	if read.smallDone == "" {
		return r
	}
	past := append([]string{read.smallDone}, read.smallPast...)
	r.expr = strings.Replace(r.expr, "SET ", "SET #spast = :spast, ", 1)
	r.names["#spast"], r.values[":spast"] = attrSmallPast, s(strings.Join(past[:min(len(past), smallPastLen)], ","))
	return r
}

// smallPastLen is how many earlier small turns spast records: 135 bytes,
// which keeps a chain's lock row (239 bytes without) at 1 WRU a write.
const smallPastLen = 8

// acked records the ack's time (lockRow.updatedAt) in the release.
func (r lockRelease) acked(nowMs int64) lockRelease {
	r.expr = strings.Replace(r.expr, "SET ", "SET #upd = :upd, ", 1)
	r.names["#upd"], r.values[":upd"] = attrUpdatedAt, n(nowMs)
	return r
}

// withKV records the digest of the KV state the turn leaves (kvdigest.go).
func (r lockRelease) withKV(digest string) lockRelease {
	r.expr = strings.Replace(r.expr, "SET ", "SET #kvd = :kvd, ", 1)
	r.names["#kvd"], r.values[":kvd"] = attrKVDigest, s(digest)
	return r
}

// keeping makes the release keep the lock for this process: the lock
// passes to the kept lock's token and lease instead of going.
func (r lockRelease) keeping(k *keptLock) lockRelease {
	if k == nil {
		return r
	}
	r.expr = strings.Replace(r.expr, "REMOVE #tok, #until, ", "REMOVE ", 1)
	r.expr = strings.Replace(r.expr, "SET ", "SET #tok = :ktok, #until = :kuntil, ", 1)
	r.values[":ktok"], r.values[":kuntil"] = s(k.token), n(k.until)
	return r
}

// update returns the release as a transaction action conditioned on cond.
func (r lockRelease) update(table *string, instance, cond string, names map[string]string, values map[string]types.AttributeValue) *types.Update {
	u := &types.Update{
		TableName:                 table,
		Key:                       key(keys.InstancePK(instance), keys.Lock),
		UpdateExpression:          aws.String(r.expr),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  maps.Clone(r.names),
		ExpressionAttributeValues: maps.Clone(r.values),
	}
	maps.Copy(u.ExpressionAttributeNames, names)
	maps.Copy(u.ExpressionAttributeValues, values)
	return u
}

// updateItem is u as a single-item request.
func updateItem(u *types.Update) *dynamodb.UpdateItemInput {
	return &dynamodb.UpdateItemInput{
		TableName: u.TableName, Key: u.Key, UpdateExpression: u.UpdateExpression,
		ConditionExpression: u.ConditionExpression, ExpressionAttributeNames: u.ExpressionAttributeNames,
		ExpressionAttributeValues: u.ExpressionAttributeValues,
	}
}

// holderCondition is a holder's release condition: token holds the lock
// and committed no large turn.
func holderCondition(token string) (string, map[string]string, map[string]types.AttributeValue) {
	return "#tok = :tok AND attribute_not_exists(#turn)",
		map[string]string{"#tok": attrToken, "#turn": attrTurn},
		map[string]types.AttributeValue{":tok": s(token)}
}

// releaseUndelivered gives up a lock this fetch cannot hand out, restoring
// the attempt counts (no delivery, no attempt).
func (p *Provider) releaseUndelivered(instance string, turn *turnState) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p.releaseLock(ctx, instance, turn.token, turn.undelivered)
}

// releaseLock releases token's lock on instance, writing attempts as the
// attempt map. Failures are only logged: the lease ends anyway.
func (p *Provider) releaseLock(ctx context.Context, instance, token string, attempts map[string]uint32) {
	cond, names, values := holderCondition(token)
	u := newLockRelease(attempts, "", "").update(p.table, instance, cond, names, values)
	_, err := p.resend(ctx, "release", func() error {
		_, err := p.db.UpdateItem(ctx, updateItem(u))
		return err
	})
	if err != nil && !conditionFailed(err) {
		p.o.Logger.Warn("dynamo: releasing an instance lock failed", "instance", instance, "error", err)
	}
}

// RenewOrchestrationItemLock extends a live lock to now+extendFor. An
// unknown, released or expired lock fails with
// [provider.ErrInvalidLockToken]. Transient failures are retried inside
// the call (docs/design.md §6); an error means the lock is lost or the
// context ended.
//
// Requests: one UpdateItem; on a failure, a consistent GetItem of the lock
// row and more attempts.
func (p *Provider) RenewOrchestrationItemLock(ctx context.Context, lockToken string, extendFor time.Duration) error {
	tok, err := parseOrchToken(lockToken)
	if err != nil {
		return invalidToken(provider.OpRenewOrchestrationItemLock)
	}
	var knownEnd int64
	turn := p.turns.get(lockToken)
	if turn != nil {
		knownEnd = turn.leaseEnd()
	}
	k := key(keys.InstancePK(tok.instance), keys.Lock)
	until, err := p.renewLease(ctx, renewal{
		op: provider.OpRenewOrchestrationItemLock, knownEnd: knownEnd, extendFor: extendFor,
		write: func(ctx context.Context, now, until int64) error {
			_, err := p.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName:                 p.table,
				Key:                       k,
				UpdateExpression:          aws.String("SET #until = :until ADD #ver :one"),
				ConditionExpression:       aws.String("#tok = :tok AND #until > :now"),
				ExpressionAttributeNames:  map[string]string{"#tok": attrToken, "#until": attrLockUntil, "#ver": attrLockVer},
				ExpressionAttributeValues: map[string]types.AttributeValue{":tok": s(lockToken), ":now": n(now), ":until": n(until), ":one": n(1)},
			})
			if conditionFailed(err) {
				return invalidToken(provider.OpRenewOrchestrationItemLock)
			}
			return err
		},
		read: func(ctx context.Context) (int64, bool, error) { return p.leaseOf(ctx, k, lockToken) },
	})
	if err != nil {
		return translate(provider.OpRenewOrchestrationItemLock, err)
	}
	if turn != nil {
		turn.setLeaseEnd(until)
		p.waits.renewed(turn.st.id, turn.token, until)
	}
	return nil
}

// leaseOf reads, consistently, the lease end of row k and whether token
// holds it.
func (p *Provider) leaseOf(ctx context.Context, k item, token string) (untilMs int64, held bool, err error) {
	out, err := p.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: p.table, Key: k, ConsistentRead: aws.Bool(true),
		ProjectionExpression:     aws.String("#tok, #until"),
		ExpressionAttributeNames: map[string]string{"#tok": attrToken, "#until": attrLockUntil},
	})
	if err != nil {
		return 0, false, err
	}
	if tok, _, _ := strAttr(out.Item, attrToken); tok != token {
		return 0, false, nil
	}
	var d decoder
	until := d.int(out.Item, attrLockUntil)
	return until, d.err == nil, d.err
}
