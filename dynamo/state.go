package dynamo

import (
	"context"
	"fmt"
	"maps"
	"runtime"
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
	// kvStore is the KV store as the last execution to end left it, and
	// kvDelta the current execution's writes, as the KV rows hold them
	// (kvRow): a clear of every key is a clear of each stored key. Both
	// hold what the rows hold only when kvLoaded is set: a fetch does not
	// read the KV rows (kvSnapshot, turnKV).
	kvStore  map[string]provider.KVEntry
	kvDelta  provider.KVDelta
	kvLoaded bool
	// msgsReadTo is, when the read did not reach the last message
	// (loadFetchState), a sort key at or after the last message read and
	// before every message not read. Empty when msgs holds every queued
	// message.
	msgsReadTo string
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
	// status is the current execution's status as the record holds it
	// ("" when it holds none).
	status string
	// execs and events are the record's figures (contribution): the
	// instance's executions, and the events of those with a terminal
	// status.
	execs, events uint64
	// run holds the figures turns alone set (metrics.go).
	run runFigures
	// current is the copy of the current execution's record the instance
	// record holds (all but its output); nil when the record was written
	// without it.
	currentCopy *execRow
	// result is how the current execution ended, copied for
	// InstanceStatus; nil while it runs, and when the copy would not fit.
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
	// turn is the id of a committed large turn not yet fully applied, and
	// turnExec the execution its history belongs to.
	turn     string
	turnExec uint64
	// turnDone is the id of the last large turn finished, so that a
	// retried ack of it succeeds.
	turnDone string
	// smallDone is the smallTurnID of the last turn that fitted one
	// transaction, so that its ack retried by a process that did not make
	// it learns it is in. Apart from turnDone: a small turn must not erase
	// the record a late roll-forward of a large turn reads.
	smallDone string
	// smallPast holds the smallDone records before smallDone, newest
	// first, at most smallPastLen (stored joined by commas): a process
	// whose cached history ends at one of those turns reads only the rows
	// after it (historyCache).
	smallPast []string
	// histMark changes whenever history is written outside turns
	// (AppendWithExecution), so that cached histories are not used
	// (historyCache).
	histMark string
	// updatedAt is when the last turn was acked (epoch ms): kept on the
	// lock row, which every ack writes, so that #META is written only
	// when what it holds changes.
	updatedAt int64
	// kvDigest is the digest of the KV rows the last turn left (kvDigest;
	// "" when unknown).
	kvDigest string
	// histEnd is where the last turn left the history
	// (Provider.settledHistory; nil when unknown).
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
	// pruning is set while a prune removes the execution: readers treat
	// it as gone, and the next prune finishes removing it.
	pruning bool
	// partial marks a record rebuilt from the instance record's copy of a
	// finished execution: its output is not known.
	partial bool
}

// queueRow is one orchestrator message row.
type queueRow struct {
	sk, seq, kind, data string
	visible             int64
}

// loadState reads the control rows of instance (one consistent Query, paged
// for very large instances).
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

// fetchPageItems is the Limit of a fetch's first read of control rows.
// Every control row but the messages sorts before the first message, so
// an ordinary instance's rows fit one page; an instance with a long queue
// fills it with its oldest messages, which are the ones a turn takes.
const fetchPageItems = 256

// loadFetchState reads what a fetch needs of instance's control rows: the
// lock row, the instance record and the messages visible now, oldest
// first. One consistent Query of the range from the lock row (after every
// KV row) to the first message not visible now: messages sort by the time
// they become visible (keys.MessageSK), so future timers lie past its end
// however many there are, and KV rows before its start however many keys
// the instance holds. The turn gets its KV snapshot elsewhere (kvSnapshot)
// and its ack the rows it rewrites (turnKV).
//
// The read stops once the rows read hold more visible messages than one
// turn takes (maxTurnMessages), so that a long queue (a fan-in of
// thousands of completions, a flood of events) costs each turn one page
// (fetchPageItems rows), not a read of the whole queue.
//
// The execution records, which sort before every other control row and
// grow by one per continue-as-new, are not read: the instance record
// holds a copy of the current execution's (metaItem), which is all a
// fetch and its ack use. An eternal orchestration's turns cost the same
// after ten thousand executions as after one.
func (p *Provider) loadFetchState(ctx context.Context, instance string) (*instanceState, error) {
	visible, now := 0, p.nowMs()
	from, end := fetchRange(now)
	rows, complete, err := p.queryRange(ctx, partitionRange{
		pk: keys.InstancePK(instance), from: from, to: end,
		firstPage: fetchPageItems,
		enough: func(page []item) bool {
			for _, row := range page {
				// A message an abandon delayed keeps its key: its time is
				// the attribute's.
				if sk, _, _ := strAttr(row, attrSK); strings.HasPrefix(sk, keys.QueuePrefix) {
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
	// Messages at or past the end were not read: the lock keeps their
	// attempt counts (lockTurn).
	st.msgsReadTo = end
	if !complete && len(rows) > 0 {
		st.msgsReadTo, _, _ = strAttr(rows[len(rows)-1], attrSK)
	}
	if st.lock.kvDigest == "" {
		// Only acks write KV rows, and every ack records their digest on
		// the lock row: a partition whose lock row has none (or that has
		// no lock row) holds no KV rows of the instance.
		st.kvLoaded = true
	}
	return st, p.fetchExecs(ctx, st)
}

// fetchRange is the range of sort keys a fetch at nowMs reads
// (loadFetchState): from the first sort key after every KV row's, which
// the lock row and the instance record follow, to the first message not
// visible at nowMs.
func fetchRange(nowMs int64) (from, to string) {
	return prefixEnd(keys.KVRowsPrefix), keys.MessagesEnd(nowMs)
}

// fetchExecs gives a fetch's st the current execution's record: the
// instance record's copy of it, or, for an instance record written without
// the copy or none yet where turns have run, the records themselves.
func (p *Provider) fetchExecs(ctx context.Context, st *instanceState) error {
	switch {
	case st.meta != nil && st.meta.currentCopy != nil:
		// The instance record's copy is the current execution's record
		// (partial when finished: see Provider.readExecIfNeeded).
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

// readExecIfNeeded makes sure st holds the whole record of execution id
// when a turn of it is about to be planned and the fetch's read may not
// have had it: the fetch rebuilt the current execution's record from the
// instance record's copy (a finished one without its output, which a turn
// that rewrites the record without a new status must keep), and read no
// older record (which an ack for an older execution would update). No
// runtime sends either turn, so this costs nothing in practice.
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
	return st, nil
}

// parseMetaRow decodes the instance record, with its copy of the current
// execution's record when it holds one (metaItem); d keeps the first
// error.
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

// parseExecRow decodes the execution record at sort key sk; d keeps the
// first error.
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

// addKVRow decodes a KV row into st's store and the current execution's
// delta; d keeps the first error.
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

// mayHoldHistory reports whether the instance's partition may hold history
// rows: it has an instance record or an execution record (every committed
// turn leaves one), or its lock row carries a history mark (an append
// outside turns leaves one, creating the row if need be).
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

// pinned is the current execution's pinned version; nil when unpinned or
// when the instance does not exist yet.
func (st *instanceState) pinned() *provider.SemVer {
	if e := st.currentExec(); e != nil {
		return e.pinned
	}
	return nil
}

// clone returns a deep enough copy of st for a turn to modify.
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

// decodeHistorySized is decodeHistory that also returns the memory the
// events take, approximately: their stored JSON and eventMemory each.
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
	// A long history (a fan-in's, a cold fetch of an old instance) is
	// decoded on every core.
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

// parallelDecodeEvents is the number of events per core below which a
// history is decoded on one.
const parallelDecodeEvents = 1000
