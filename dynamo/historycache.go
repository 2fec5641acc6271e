package dynamo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/provider"
)

// attrHistMark is the lock row's history mark (lockRow.histMark).
const attrHistMark = "hmark"

// historyCache keeps, per instance, the history of its current execution
// as this process last knew it, decoded, so that a fetch that follows this
// process's own ack of the instance's previous turn neither reads nor
// decodes it (docs/design.md §5: every fetch re-read the whole execution
// before, and then decoded every event of it on every turn).
//
// An entry is valid for exactly one state of the lock row: the one this
// process's ack left. A turn that fits one transaction records its id
// (smallTurnID, unique: it hashes the random lock token) in the lock row,
// and every later write of history records something else there: another
// process's ack its own turn id, a large turn its id in the large-turn
// record, an append outside turns a fresh history mark, a deletion the
// row's removal. Lock writes that append nothing (fetches, renewals,
// abandons) keep all three. So a fetch that reads the lock row and finds
// the turn records as the entry's ack left them, and the history mark as
// the entry's fetch read it, knows the stored history is the entry's
// events; and its own lock write is conditioned on the row it read, so
// nothing can slip in between. (The mark is compared with the fetch's
// read, not the ack's: an append during the turn is missing from the
// entry.)
//
// The events are what decoding the stored rows gives (an ack's rows are
// decoded as a fetch would decode them), and a fetch hands them to its
// caller without a copy: [provider.OrchestrationItem] callers do not
// modify its History. Slices handed out are clipped to their length, so
// that an ack appending to an entry never writes where a holder can read.
type historyCache struct {
	mu      sync.Mutex
	entries map[string]*historyEntry
	order   []string // instances, oldest entry first (may hold stale names)
	bytes   int
}

// historyEntry is one instance's cached history.
type historyEntry struct {
	execution uint64
	// smallDone, largeDone and histMark are the lock row's records the
	// events are valid for; valid is false until an ack has set them.
	smallDone, largeDone, histMark string
	valid                          bool
	// token is the lock token of the turn that last fetched these events:
	// only its ack may extend them.
	token  string
	events []provider.Event
	bytes  int
}

// maxHistoryCacheBytes and maxHistoryCacheEntries bound the cache; the
// oldest entries go first. An entry's bytes are its events' stored JSON
// and a fixed amount per event (eventMemory).
const (
	maxHistoryCacheBytes   = 64 << 20
	maxHistoryCacheEntries = 4096
	eventMemory            = 128
)

// lookup returns the cached events of instance's execution, and the bytes
// they count, when the lock row read (lock) is the state they are valid
// for.
func (c *historyCache) lookup(instance string, execution uint64, lock lockRow) ([]provider.Event, int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[instance]
	if e == nil || !e.valid || e.execution != execution || lock.smallDone != e.smallDone || lock.turnDone != e.largeDone || lock.histMark != e.histMark {
		return nil, 0, false
	}
	return slices.Clip(e.events), e.bytes, true
}

// prefix returns the cached events of instance's execution, and the bytes
// they count, when they are the start of the stored history although the
// lock row read (lock) is not the state they are valid for: every turn
// since the entry's ack fitted one transaction (the ack's small-turn
// record is among the lock row's smallPast, which only such turns push,
// each one's fetch having read the row the previous one left), and no
// large turn, append or deletion has come between (the large-turn record
// and the history mark are as the entry's, and a re-created instance's
// lock row holds none of this process's random turn ids). Those turns only
// added events after the entry's: the caller reads the rows after them and
// checks that they end where lock.histEnd says.
func (c *historyCache) prefix(instance string, execution uint64, lock lockRow) ([]provider.Event, int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[instance]
	if e == nil || !e.valid || e.execution != execution || len(e.events) == 0 || e.smallDone == "" ||
		lock.turn != "" || lock.turnDone != e.largeDone || lock.histMark != e.histMark ||
		lock.histEnd == nil || lock.histEnd.exec != execution || lock.histEnd.events < uint64(len(e.events)) ||
		!slices.Contains(lock.smallPast, e.smallDone) {
		return nil, 0, false
	}
	return slices.Clip(e.events), e.bytes, true
}

// fetched records the events (of stored size bytes) a fetch returned for
// the turn token locked, having read lock. The entry becomes valid when
// that turn's ack commits (acked).
func (c *historyCache) fetched(instance string, execution uint64, token string, lock lockRow, events []provider.Event, bytes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entries[instance]; e != nil && e.execution == execution && sameEvents(e.events, events) {
		e.token = token // events from the cache: the entry stays as it is
		return
	}
	if c.entries == nil {
		c.entries = map[string]*historyEntry{}
	}
	c.removeLocked(instance)
	if bytes > maxHistoryCacheBytes {
		return
	}
	c.entries[instance] = &historyEntry{execution: execution, token: token, histMark: lock.histMark, events: slices.Clip(events), bytes: bytes}
	c.order = append(c.order, instance)
	c.bytes += bytes
	c.evictLocked(instance)
}

// acked extends the entry of the turn token held by the history rows its
// ack wrote (uncompressed) and makes it valid for the lock row the ack
// left: smallDone as the ack recorded it, largeDone as the fetch read it.
// Rows that do not decode drop the entry.
func (c *historyCache) acked(instance, token string, execution uint64, added []item, smallDone, largeDone string) {
	events, bytes, err := decodeHistorySized(provider.OpAckOrchestrationItem, instance, execution, added)
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[instance]
	if err != nil || e == nil || e.token != token || e.execution != execution {
		c.removeLocked(instance)
		return
	}
	// Appending may write past the end of a slice handed out, never
	// inside one: lookup clips what it returns.
	e.events = append(e.events, events...)
	e.bytes += bytes
	c.bytes += bytes
	e.smallDone, e.largeDone, e.valid, e.token = smallDone, largeDone, true, ""
	if e.bytes > maxHistoryCacheBytes {
		c.removeLocked(instance)
		return
	}
	c.evictLocked(instance)
}

// markHistoryWritten records in instance's lock row, creating the row when
// there is none, that its history was written outside turns: a fresh
// history mark, and the version moved on as by every lock-row write, so
// that a fetch that read the row before fails its lock write instead of
// copying the old mark back. A fetch of an instance with no record reads
// its history only when the mark is there (instanceState.mayHoldHistory).
// One UpdateItem.
func (p *Provider) markHistoryWritten(ctx context.Context, instance string) error {
	p.history.drop(instance)
	var b [8]byte
	rand.Read(b[:])
	_, err := p.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 p.table,
		Key:                       key(keys.InstancePK(instance), keys.Lock),
		UpdateExpression:          aws.String("SET #hmark = :mark ADD #ver :one REMOVE #hexec, #hlen"),
		ExpressionAttributeNames:  map[string]string{"#hmark": attrHistMark, "#ver": attrLockVer, "#hexec": attrHistExec, "#hlen": attrHistLen},
		ExpressionAttributeValues: map[string]types.AttributeValue{":mark": s(hex.EncodeToString(b[:])), ":one": n(1)},
	})
	return err
}

// drop forgets instance's entry.
func (c *historyCache) drop(instance string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(instance)
}

func (c *historyCache) removeLocked(instance string) {
	if e := c.entries[instance]; e != nil {
		c.bytes -= e.bytes
		delete(c.entries, instance)
	}
}

// evictLocked removes the oldest entries other than keep until the cache
// is within its bounds, and compacts order.
func (c *historyCache) evictLocked(keep string) {
	for (c.bytes > maxHistoryCacheBytes || len(c.entries) > maxHistoryCacheEntries) && len(c.order) > 0 {
		oldest := c.order[0]
		c.order = c.order[1:]
		if oldest != keep {
			c.removeLocked(oldest)
		}
	}
	if len(c.order) > 2*maxHistoryCacheEntries {
		seen := map[string]bool{}
		kept := c.order[:0]
		for _, id := range c.order {
			if c.entries[id] != nil && !seen[id] {
				seen[id] = true
				kept = append(kept, id)
			}
		}
		c.order = kept
	}
}

// sameEvents reports whether a and b are the same events (a fetch that
// took its events from the cache hands them back).
func sameEvents(a, b []provider.Event) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// historyAfterCached returns the history of instance's execution when the
// cache holds its start (historyCache.prefix): the cached events and those
// of the rows after them, read with one Query, and their bytes. ok is false
// when the cache holds no such start, or when the rows read do not follow
// it event by event up to the end lock records (a read that raced a
// commit, rows not dense): the caller then reads the whole history.
func (p *Provider) historyAfterCached(ctx context.Context, instance string, execution uint64, lock lockRow) (events []provider.Event, bytes int, ok bool, err error) {
	cached, cachedBytes, ok := p.history.prefix(instance, execution, lock)
	if !ok {
		return nil, 0, false, nil
	}
	next := cached[len(cached)-1].EventID + 1
	prefix := keys.HistoryPrefix(execution)
	rows, _, err := p.queryRange(ctx, partitionRange{pk: keys.InstancePK(instance), from: keys.HistorySK(execution, next), to: prefixEnd(prefix)})
	if err != nil {
		return nil, 0, false, err
	}
	rows, turnID := splitTurnMark(rows)
	if turnID != "" || uint64(len(cached))+historyEvents(rows) != lock.histEnd.events {
		return nil, 0, false, nil
	}
	added, addedBytes, err := decodeHistorySized(provider.OpFetchOrchestrationItem, instance, execution, rows)
	if err != nil {
		return nil, 0, false, nil // the whole read reports it
	}
	for _, e := range added {
		if e.EventID != next {
			return nil, 0, false, nil
		}
		next++
	}
	return append(cached, added...), cachedBytes + addedBytes, true, nil
}
