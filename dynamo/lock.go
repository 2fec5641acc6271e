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
// its expression here. The fencing rules (docs/design.md §6):
//
//  1. Every write moves the version on (ver). A steal is a Put conditioned
//     on the version its fetch read, so a steal decided on a read that any
//     later write (an ack, a renewal, an abandon, a large-turn commit)
//     outdated fails.
//  2. A steal also requires, in its condition, that no committed large turn
//     is pending and that the lease is over by the stealer's clock. A
//     delayed request carries an older :now, which only makes that check
//     stricter.
//  3. Every write of the holder is conditioned on its token; the release
//     also on no pending large turn, so that a small ack cannot erase a
//     committed large one.
//
// A holder's write evaluated against a stale :now (a request the network
// or the SDK's retryer delivered late) can succeed after the lease ended by
// its clock; rule 1 and 3 make that harmless: no one else can have taken
// the lock in between without changing the token.

// stealCondition is the condition of a fetch's lock write: the row is as
// the fetch read it (version), holds no pending large turn, and its lease
// is over at nowMs; or there is no row yet.
func (st *instanceState) stealCondition(nowMs int64) (cond *string, names map[string]string, values map[string]types.AttributeValue) {
	if !st.lock.exists {
		return aws.String("attribute_not_exists(#pk)"), map[string]string{"#pk": attrPK}, nil
	}
	return aws.String("#ver = :ver AND attribute_not_exists(#turn) AND (attribute_not_exists(#tok) OR #until <= :now)"),
		map[string]string{"#ver": attrLockVer, "#turn": attrTurn, "#tok": attrToken, "#until": attrLockUntil},
		map[string]types.AttributeValue{":ver": nu(st.lock.ver), ":now": n(nowMs)}
}

// lockAsRead is the condition that the instance's lock row is still as st
// read it: at the same version, or still absent.
func (st *instanceState) lockAsRead() (cond *string, names map[string]string, values map[string]types.AttributeValue) {
	if st.lock.exists {
		return aws.String("#ver = :ver"), map[string]string{"#ver": attrLockVer}, map[string]types.AttributeValue{":ver": nu(st.lock.ver)}
	}
	return aws.String("attribute_not_exists(#pk)"), map[string]string{"#pk": attrPK}, nil
}

// lockTurn wins the instance lock for batch: one conditional PutItem of the
// lock row (see stealCondition). The lease counts from a clock read taken
// just before the request, and the request may wait three quarters of it
// (claimBudget); a lock that comes back with less than a quarter left is
// released and reported as nil.
func (p *Provider) lockTurn(ctx context.Context, st *instanceState, batch []queueRow, lockTimeout time.Duration) (*turnState, error) {
	ver := st.lock.ver + 1
	token := newOrchToken(orchToken{instance: st.id, ver: ver})
	before := map[string]uint32{}
	for _, m := range st.msgs {
		if a, ok := st.lock.attempts[m.sk]; ok {
			before[m.sk] = a
		}
	}
	if st.msgsReadTo != "" {
		// Messages after the rows read were not seen, so not known gone:
		// their counts stay.
		for sk, a := range st.lock.attempts {
			if sk > st.msgsReadTo {
				before[sk] = a
			}
		}
	}
	attempts := maps.Clone(before)
	sks := make([]string, len(batch))
	for i, m := range batch {
		attempts[m.sk]++
		sks[i] = m.sk
	}
	start := p.nowMs()
	until := start + durMs(lockTimeout)
	row := lockItem(st.id, ver, attempts)
	row[attrToken] = s(token)
	row[attrLockUntil] = n(until)
	row[attrBatch] = stringList(sks)
	if st.lock.turnDone != "" {
		// Kept, so that a late ack of the last large turn learns it is in.
		row[attrTurnDone] = s(st.lock.turnDone)
	}
	if st.lock.smallDone != "" {
		// Kept, so that an ack of the last small turn retried elsewhere
		// learns it is in.
		row[attrSmallDone] = s(st.lock.smallDone)
	}
	if len(st.lock.smallPast) > 0 {
		row[attrSmallPast] = s(strings.Join(st.lock.smallPast, ",")) // kept, as smallDone
	}
	if st.lock.histMark != "" {
		// Kept, so that histories cached before an append are not used.
		row[attrHistMark] = s(st.lock.histMark)
	}
	if st.lock.updatedAt != 0 {
		row[attrUpdatedAt] = n(st.lock.updatedAt) // kept: the last ack's time
	}
	if st.lock.kvDigest != "" {
		row[attrKVDigest] = s(st.lock.kvDigest) // kept: the KV rows are the last turn's
	}
	if e := st.lock.histEnd; e != nil {
		row[attrHistExec], row[attrHistLen] = nu(e.exec), nu(e.events) // kept: the history is the last turn's
	}
	in := &dynamodb.PutItemInput{TableName: p.table, Item: row,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}
	in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues = st.stealCondition(start)
	if _, err := p.db.PutItem(underClaim(ctx, start+durMs(claimBudget(lockTimeout))), in); err != nil && heldItem(err, token) == nil {
		if conditionFailed(err) {
			return nil, nil // another dispatcher won, or the lock is live after all
		}
		// An unknown outcome: the row tells whether the write landed.
		if held, rerr := p.heldBy(ctx, key(keys.InstancePK(st.id), keys.Lock), token); rerr != nil || !held {
			return nil, err
		}
	}
	turn := &turnState{token: token, st: st, ver: ver, until: until, batch: sks, attempts: attempts, undelivered: before}
	if ctx.Err() != nil {
		// The claim landed but the caller is gone: hand the instance back.
		p.releaseUndelivered(st.id, turn)
		return nil, ctx.Err()
	}
	if !usefulLease(until, p.nowMs(), lockTimeout) {
		p.o.Logger.Warn("dynamo: instance lock came back with less than a quarter of its lease left; released", "instance", st.id, "lock_timeout", lockTimeout)
		p.releaseUndelivered(st.id, turn)
		return nil, nil
	}
	return turn, nil
}

// heldBy reports whether the row at k holds lock token (a consistent
// read): how a write whose response was lost is found to have landed.
//
// It reads even when ctx was cancelled, the usual cause of an unknown
// outcome: a claim that landed must be found and released, or the row
// stays locked until its lease ends.
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

// unknownOutcomeReadTimeout bounds the read that settles an unknown
// outcome after the caller's context ended.
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

// lockRelease is an update of the lock row that gives up the lock: it
// drops the token, lease, batch and large-turn pointer, sets the attempt
// counts to attempts, and moves the version on. largeDone, when not empty,
// records the large turn the release finishes, and smallDone the turn that
// fitted one transaction (smallTurnID); the record it does not set stays,
// so that a late ack or roll-forward of that turn learns it is in.
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

// withSmallPast is the release of a turn that fits one transaction with
// the small-turn record its fetch read (read.smallDone) pushed onto the
// records before it (lockRow.smallPast), so that a process whose cached
// history ends at one of those turns reads only the rows after it
// (historycache.go). The release replaces that record with the turn's own.
func (r lockRelease) withSmallPast(read lockRow) lockRelease {
	if read.smallDone == "" {
		return r
	}
	past := append([]string{read.smallDone}, read.smallPast...)
	r.expr = strings.Replace(r.expr, "SET ", "SET #spast = :spast, ", 1)
	r.names["#spast"], r.values[":spast"] = attrSmallPast, s(strings.Join(past[:min(len(past), smallPastLen)], ","))
	return r
}

// smallPastLen is how many small turns before the last the lock row
// records (lockRow.smallPast): 8 ids of 16 hex digits, 135 bytes with their
// commas (a chain's lock row is 239 bytes without them, so its writes stay
// at 1 write unit a KB).
const smallPastLen = 8

// acked is the release with the time of the turn's ack recorded
// (lockRow.updatedAt).
func (r lockRelease) acked(nowMs int64) lockRelease {
	r.expr = strings.Replace(r.expr, "SET ", "SET #upd = :upd, ", 1)
	r.names["#upd"], r.values[":upd"] = attrUpdatedAt, n(nowMs)
	return r
}

// withKV is the release with the digest of the KV state the turn leaves
// recorded (kvdigest.go).
func (r lockRelease) withKV(digest string) lockRelease {
	r.expr = strings.Replace(r.expr, "SET ", "SET #kvd = :kvd, ", 1)
	r.names["#kvd"], r.values[":kvd"] = attrKVDigest, s(digest)
	return r
}

// update returns the release as a transaction action on instance's lock
// row, conditioned on cond (whose placeholders are added to the
// release's).
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

// holderCondition is the condition of a release by the holder of token:
// the token still holds the lock and no large turn of it is committed.
func holderCondition(token string) (string, map[string]string, map[string]types.AttributeValue) {
	return "#tok = :tok AND attribute_not_exists(#turn)",
		map[string]string{"#tok": attrToken, "#turn": attrTurn},
		map[string]types.AttributeValue{":tok": s(token)}
}

// releaseUndelivered gives up a lock this fetch won but cannot hand out,
// with the attempt counts as they were before the fetch (the batch was
// never delivered, so it was no attempt). Failures are logged: the lease
// ends anyway.
func (p *Provider) releaseUndelivered(instance string, turn *turnState) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cond, names, values := holderCondition(turn.token)
	u := newLockRelease(turn.undelivered, "", "").update(p.table, instance, cond, names, values)
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
// [provider.ErrInvalidLockToken]. Throttling, conflicts and lost
// responses are retried inside the call, each attempt sent once with a
// fresh clock read, and an attempt whose answer was lost is looked up
// (renewLease): an error means the lock is lost, proved by the row or
// decided by the clock, or that the context ended.
//
// Requests: one UpdateItem conditioned on the token and a live lease; on
// a failure, a consistent GetItem of the lock row and more attempts.
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

// leaseOf reads the row at k consistently: the end of its lease, and
// whether token holds it.
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
