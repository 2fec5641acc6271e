package dynamo

import (
	"context"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/provider"
)

// instanceState is what one consistent Query of an instance's control rows
// says about it: metadata, lock, executions, queued messages and KV.
type instanceState struct {
	id    string
	meta  *metaRow
	lock  lockRow
	execs map[uint64]*execRow
	// msgs are the queued orchestrator messages in queue (sort-key) order.
	msgs []queueRow
	// kvStore is the store as the last ended execution left it, kvDelta the
	// current execution's writes (kvRow); both hold the rows only when
	// kvLoaded (a fetch does not read them: kvSnapshot, turnKV).
	kvStore  map[string]provider.KVEntry
	kvDelta  provider.KVDelta
	kvLoaded bool
	// msgsReadTo is a sort key at or after the last message read and before
	// every one not read (loadFetchState); "" when msgs holds them all.
	msgsReadTo string
	// slot is the activity slot (slot.go); nil when there is none.
	slot *slotRow
}

// metaRow is the #META row.
type metaRow struct {
	name, version string
	current       uint64
	parent        string
	cstat         *string
	cstatVersion  uint64
	createdAt     int64
	updatedAt     int64
	// status is the current execution's status ("" when the record has none).
	status string
	// execs and events are the figures (contribution): executions, and
	// events of those with a terminal status.
	execs, events uint64
	// run holds the figures turns alone set (metrics.go).
	run runFigures
	// currentCopy is the record's copy of the current execution's (without
	// its output); nil when written without it.
	currentCopy *execRow
	// result is how the current execution ended (InstanceStatus); nil while
	// it runs or when it would not fit.
	result *endedResult
}

// lockRow is the #LOCK row; exists is false when there is none.
type lockRow struct {
	exists bool
	token  string
	until  int64
	ver    uint64
	// attempts maps message sort keys to attempt counts.
	attempts map[string]uint32
	// batch holds the sort keys of the messages the lock holds.
	batch []string
	// turn is a committed large turn not yet finished, turnExec its execution.
	turn     string
	turnExec uint64
	// turnDone is the last large turn finished: a retried ack of it succeeds.
	turnDone string
	// smallDone is the last small turn's smallTurnID. Apart from turnDone:
	// a small turn must not erase what a late roll-forward reads.
	smallDone string
	// smallPast holds up to smallPastLen earlier smallDone records, newest
	// first (stored joined by commas; historyCache).
	smallPast []string
	// histMark changes when history is written outside turns (historyCache).
	histMark string
	// updatedAt is the last ack's time (epoch ms), here so that #META is
	// written only when what it holds changes.
	updatedAt int64
	// kvDigest digests the KV rows the last turn left ("" when unknown).
	kvDigest string
	// histEnd is where the last turn left the history (nil when unknown).
	histEnd *historyEnd
}

// live reports whether the lock is held at nowMs.
func (l lockRow) live(nowMs int64) bool { return l.token != "" && l.until > nowMs }

// execRow is one #EXEC# row.
type execRow struct {
	id          uint64
	status      string
	output      *string
	startedAt   int64
	completedAt *int64
	pinned      *provider.SemVer
	// pruning is set while a prune removes it; readers treat it as gone.
	pruning bool
	// partial marks a copy from the instance record: output unknown.
	partial bool
}

// queueRow is one orchestrator message row.
type queueRow struct {
	sk, seq, kind, data string
	visible             int64
}

// loadState reads instance's control rows (one consistent Query, paged).
func (p *Provider) loadState(ctx context.Context, instance string) (*instanceState, error) {
	rows, err := p.queryPartition(ctx, keys.InstancePK(instance), "#", keys.ControlEnd)
	if err != nil {
		return nil, err
	}
	st, err := parseState(instance, rows)
	if err != nil {
		return nil, err
	}
	st.kvLoaded = true
	return st, nil
}

// fetchPageItems is the Limit of a fetch's first page: other control rows
// sort before the messages, so a long queue fills it with its oldest.
const fetchPageItems = 256

// loadFetchState reads the lock row, the instance record and the messages
// visible now, oldest first: one consistent Query from after the KV rows to
// the first message not visible (docs/design.md §3), stopped once it holds
// more visible messages than a turn takes (maxTurnMessages). Execution
// records are not read: the instance record's copy stands in (fetchExecs).
func (p *Provider) loadFetchState(ctx context.Context, instance string) (*instanceState, error) {
	visible, now := 0, p.nowMs()
	from, end := fetchRange(now)
	rows, complete, err := p.queryRange(ctx, partitionRange{
		pk: keys.InstancePK(instance), from: from, to: end,
		firstPage: fetchPageItems,
		enough: func(page []item) bool {
			for _, row := range page {
				// An abandon's delay moves vis, not the key.
				if sk, _, _ := strAttr(row, attrSK); strings.HasPrefix(sk, keys.QueuePrefix) && !isRunningSlot(row) {
					if vis, err := intAttr(row, attrVisible); err == nil && vis <= now {
						visible++
					}
				}
			}
			return visible > maxTurnMessages
		},
	})
	if err != nil {
		return nil, err
	}
	st, err := parseState(instance, rows)
	if err != nil {
		return nil, err
	}
	// The lock keeps the attempt counts of messages not read (lockTurn).
	st.msgsReadTo = end
	if !complete && len(rows) > 0 {
		st.msgsReadTo, _, _ = strAttr(rows[len(rows)-1], attrSK)
	}
	if st.lock.kvDigest == "" {
		// Only acks write KV rows, each recording their digest: none, no rows.
		st.kvLoaded = true
	}
	return st, p.fetchExecs(ctx, st)
}

// fetchRange is the sort-key range a fetch at nowMs reads: from after the
// KV rows to the first message not visible at nowMs.
func fetchRange(nowMs int64) (from, to string) {
	return prefixEnd(keys.KVRowsPrefix), keys.MessagesEnd(nowMs)
}

// fetchExecs gives st the current execution's record: the instance
// record's copy, else (no copy, or no record yet) the records themselves.
func (p *Provider) fetchExecs(ctx context.Context, st *instanceState) error {
	switch {
	case st.meta != nil && st.meta.currentCopy != nil:
		// Partial when finished (readExecIfNeeded).
		st.execs[st.meta.current] = cloneExec(st.meta.currentCopy)
	case st.meta != nil || st.lock.exists:
		execRows, err := p.queryPartition(ctx, keys.InstancePK(st.id), keys.ExecPrefix, prefixEnd(keys.ExecPrefix))
		if err != nil {
			return err
		}
		execs, err := parseState(st.id, execRows)
		if err != nil {
			return err
		}
		st.execs = execs.execs
	}
	return nil
}

// readExecIfNeeded reads execution id's full record before a turn is
// planned on a fetch that lacks it: a finished execution's copy has no
// output (which a rewrite without a new status keeps), and older records
// are not read. No runtime sends either turn.
func (p *Provider) readExecIfNeeded(ctx context.Context, st *instanceState, id uint64, meta provider.ExecutionMetadata) error {
	if st.meta == nil || st.meta.currentCopy == nil {
		return nil // the records were read
	}
	e := st.execs[id]
	switch {
	case e == nil && id < st.meta.current:
	case e != nil && e.partial && meta.Status == "" && meta.PinnedDuroxideVersion != nil:
	default:
		return nil
	}
	out, err := p.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: p.table, Key: key(keys.InstancePK(st.id), keys.ExecSK(id)), ConsistentRead: aws.Bool(true)})
	if err != nil || out.Item == nil {
		return err
	}
	full, err := parseState(st.id, []item{out.Item})
	if err != nil {
		return err
	}
	st.execs[id] = full.execs[id]
	return nil
}

// parseState decodes control rows.
func parseState(instance string, rows []item) (*instanceState, error) {
	st := &instanceState{id: instance, execs: map[uint64]*execRow{}, kvStore: map[string]provider.KVEntry{}}
	var d decoder
	for _, row := range rows {
		sk := d.str(row, attrSK)
		switch {
		case sk == keys.Meta:
			st.meta = parseMetaRow(&d, row)
		case sk == keys.Lock:
			st.lock = parseLockRow(&d, row)
		case sk == keys.SlotSK:
			var msg *queueRow
			if st.slot, msg = parseSlot(&d, row); msg != nil {
				st.msgs = append(st.msgs, *msg)
			}
		case strings.HasPrefix(sk, keys.ExecPrefix):
			e := parseExecRow(&d, sk, row)
			st.execs[e.id] = e
		case strings.HasPrefix(sk, keys.QueuePrefix):
			_, seq, err := keys.ParseMessageSK(sk)
			if err != nil {
				d.keep(fmt.Errorf("%w: %v", provider.ErrCorruptData, err))
			}
			st.msgs = append(st.msgs, queueRow{
				sk:      sk,
				seq:     seq,
				kind:    d.str(row, attrKind),
				data:    d.payload(row, attrItem),
				visible: d.int(row, attrVisible),
			})
		case strings.HasPrefix(sk, keys.KVPrefix), strings.HasPrefix(sk, keys.KVHashedPrefix):
			st.addKVRow(&d, row)
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	if st.slot != nil && st.slot.done {
		slices.SortStableFunc(st.msgs, func(a, b queueRow) int { return strings.Compare(a.messageOrder(), b.messageOrder()) })
	}
	return st, nil
}

// parseMetaRow decodes the instance record, with its copy of the current
// execution's record (metaItem); d keeps the first error.
func parseMetaRow(d *decoder, row item) *metaRow {
	m := &metaRow{
		name:         d.str(row, attrName),
		version:      d.str(row, attrVersion),
		current:      d.uint(row, attrCurrent),
		parent:       d.str(row, attrParent),
		cstat:        d.optStr(row, attrCStatus),
		cstatVersion: d.uint(row, attrCStatusVer),
		createdAt:    d.int(row, attrCreatedAt),
		updatedAt:    d.int(row, attrUpdatedAt),
		status:       d.str(row, attrStatus),
		execs:        d.uint(row, attrExecCount),
		events:       d.uint(row, attrEndedEvs),
		run:          parseRunFigures(d, row),
	}
	if _, ok := row[attrExecStartedAt]; ok {
		e := &execRow{id: m.current, status: d.str(row, attrStatus), startedAt: d.int(row, attrExecStartedAt)}
		if _, ok := row[attrCompletedAt]; ok {
			c := d.int(row, attrCompletedAt)
			e.completedAt, e.partial = &c, true
		}
		if pin := d.optStr(row, attrExecPinned); pin != nil {
			v, err := provider.ParseSemVer(*pin)
			if err != nil {
				d.keep(fmt.Errorf("%w: pinned version of execution %d in the instance record: %v", provider.ErrCorruptData, m.current, err))
			}
			e.pinned = &v
		}
		m.currentCopy = e
	}
	m.result = parseEndedResult(d, row)
	return m
}

// parseLockRow decodes the lock row; d keeps the first error.
func parseLockRow(d *decoder, row item) lockRow {
	l := lockRow{
		exists: true,
		token:  d.str(row, attrToken),
		until:  d.int(row, attrLockUntil),
		ver:    d.uint(row, attrLockVer),
		turn:   d.str(row, attrTurn),
	}
	l.turnExec = d.uint(row, attrTurnExec)
	l.turnDone = d.str(row, attrTurnDone)
	l.smallDone = d.str(row, attrSmallDone)
	if past := d.str(row, attrSmallPast); past != "" {
		l.smallPast = strings.Split(past, ",")
	}
	l.histMark = d.str(row, attrHistMark)
	l.updatedAt = d.int(row, attrUpdatedAt)
	l.kvDigest = d.str(row, attrKVDigest)
	if _, ok := row[attrHistLen]; ok {
		l.histEnd = &historyEnd{exec: d.uint(row, attrHistExec), events: d.uint(row, attrHistLen)}
	}
	l.attempts, l.batch = decodeLockLists(d, row)
	return l
}

// parseExecRow decodes the execution record at sk; d keeps the first error.
func parseExecRow(d *decoder, sk string, row item) *execRow {
	id, err := keys.ParseNum20(sk[len(keys.ExecPrefix):])
	d.keep(err)
	e := &execRow{
		id:        id,
		status:    d.str(row, attrStatus),
		output:    d.optStr(row, attrOutput),
		startedAt: d.int(row, attrStartedAt),
	}
	_, e.pruning = row[attrPruning]
	if _, ok := row[attrCompletedAt]; ok {
		c := d.int(row, attrCompletedAt)
		e.completedAt = &c
	}
	if pin := d.optStr(row, attrPinned); pin != nil {
		v, err := provider.ParseSemVer(*pin)
		if err != nil {
			d.keep(fmt.Errorf("%w: pinned version of execution %d: %v", provider.ErrCorruptData, id, err))
		}
		e.pinned = &v
	}
	return e
}

// addKVRow decodes a KV row into st's store and delta; d keeps the error.
func (st *instanceState) addKVRow(d *decoder, row item) {
	k := d.str(row, attrKVKey)
	r := d.kvRow(row)
	if r.stored != nil {
		st.kvStore[k] = *r.stored
	}
	if r.set != nil || r.cleared {
		if st.kvDelta.Entries == nil {
			st.kvDelta.Entries = map[string]*provider.KVEntry{}
		}
		st.kvDelta.Entries[k] = r.set
	}
}

// decodeLockLists reads the attempt map and batch list of a lock row.
func decodeLockLists(d *decoder, row item) (map[string]uint32, []string) {
	attempts := map[string]uint32{}
	if m, ok := row[attrAttempts].(*types.AttributeValueMemberM); ok {
		for sk := range m.Value {
			attempts[sk] = uint32(d.uint(m.Value, sk))
		}
	}
	var batch []string
	if l, ok := row[attrBatch].(*types.AttributeValueMemberL); ok {
		for _, v := range l.Value {
			if sv, ok := v.(*types.AttributeValueMemberS); ok {
				batch = append(batch, sv.Value)
			} else {
				d.keep(fmt.Errorf("%w: lock batch holds %T", provider.ErrCorruptData, v))
			}
		}
	}
	return attempts, batch
}

// mayHoldHistory reports whether the partition may hold history rows: it
// has an instance or execution record (every committed turn leaves one) or
// a history mark (every append outside turns leaves one).
func (st *instanceState) mayHoldHistory() bool {
	return st.meta != nil || len(st.execs) > 0 || st.lock.histMark != ""
}

// latestExecution is the highest execution id with a record, or 1.
func (st *instanceState) latestExecution() uint64 {
	return provider.LatestExecution(maps.Keys(st.execs))
}

// currentExec is the current execution's record, or nil.
func (st *instanceState) currentExec() *execRow {
	if st.meta == nil {
		return nil
	}
	return st.execs[st.meta.current]
}

// pinned is the current execution's pinned version, or nil.
func (st *instanceState) pinned() *provider.SemVer {
	if e := st.currentExec(); e != nil {
		return e.pinned
	}
	return nil
}

// cloneKV returns copies of st's KV store and delta for a turn to modify.
func (st *instanceState) cloneKV() (map[string]provider.KVEntry, provider.KVDelta) {
	delta := provider.KVDelta{ClearedAll: st.kvDelta.ClearedAll}
	if st.kvDelta.Entries != nil {
		delta.Entries = maps.Clone(st.kvDelta.Entries)
	}
	return maps.Clone(st.kvStore), delta
}

// decodeHistory decodes stored history rows (packHistory), in order. A
// failure wraps [provider.ErrCorruptData].
func decodeHistory(op, instance string, executionID uint64, rows []item) ([]provider.Event, error) {
	events, _, err := decodeHistorySized(op, instance, executionID, rows)
	return events, err
}

// decodeHistorySized is decodeHistory, also returning the events' memory
// (their stored JSON and eventMemory each).
func decodeHistorySized(op, instance string, executionID uint64, rows []item) ([]provider.Event, int, error) {
	stored := make([]string, 0, historyEvents(rows))
	bytes := 0
	for _, r := range rows {
		data, err := rowEvents(r)
		if err != nil {
			return nil, 0, provider.Corrupt(op, err, "history event at position %d of instance %q execution %d: %v", len(stored), instance, executionID, err)
		}
		stored = append(stored, data...)
		for _, d := range data {
			bytes += len(d) + eventMemory
		}
	}
	events := make([]provider.Event, len(stored))
	decode := func(from, to int) error {
		for i := from; i < to; i++ {
			var err error
			if events[i], err = provider.DecodeStoredEvent(op, instance, executionID, i, []byte(stored[i])); err != nil {
				return err
			}
		}
		return nil
	}
	workers := min(runtime.GOMAXPROCS(0), len(stored)/parallelDecodeEvents)
	if workers < 2 {
		if err := decode(0, len(stored)); err != nil {
			return nil, 0, err
		}
		return events, bytes, nil
	}
	// A long history is decoded on every core.
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() { errs[w] = decode(w*len(stored)/workers, (w+1)*len(stored)/workers) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, 0, err // the first part's error first: the earliest bad event
		}
	}
	return events, bytes, nil
}

// parallelDecodeEvents is the events per core below which one core decodes.
const parallelDecodeEvents = 1000
