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

// historyCache keeps, per instance, the current execution's history as
// this process's last ack left it, decoded, so that its next fetch neither
// reads nor decodes it (docs/reads.md, History cache). An entry is valid
// for one lock row state: the turn records the ack left and the history
// mark its fetch read (not the ack's: an append during the turn is missing
// from the entry). Events go to callers uncopied but clipped, so an ack
// appending to an entry never writes where a holder reads.
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
	// token is the fetching turn's lock token: only its ack extends events.
	token  string
	events []provider.Event
	bytes  int
}

// maxHistoryCacheBytes and maxHistoryCacheEntries bound the cache, oldest
// out first; an entry counts its events' stored JSON plus eventMemory each.
const (
	maxHistoryCacheBytes   = 64 << 20
	maxHistoryCacheEntries = 4096
	eventMemory            = 128
)

// lookup returns the cached events of instance's execution, and their
// bytes, when lock is the state they are valid for.
func (c *historyCache) lookup(instance string, execution uint64, lock lockRow) ([]provider.Event, int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[instance]
	if e == nil || !e.valid || e.execution != execution || lock.smallDone != e.smallDone || lock.turnDone != e.largeDone || lock.histMark != e.histMark {
		return nil, 0, false
	}
	return slices.Clip(e.events), e.bytes, true
}

// prefix returns the cached events and their bytes when they start the
// stored history though lock is not their state: only small turns came
// since the entry's ack (its record is in lock.smallPast), no large turn or
// append (docs/reads.md, After other processes' turns). The caller reads
// the rows after them and checks they end at lock.histEnd.
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

// fetched records the events (stored size bytes) a fetch of lock returned
// for token's turn; the entry becomes valid when its ack commits (acked).
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

// acked extends token's entry by the rows its ack wrote and makes it valid
// for the lock row the ack left (smallDone as recorded, largeDone as the
// fetch read it). Rows that do not decode drop the entry.
func (c *historyCache) acked(instance, token string, execution uint64, added []item, smallDone, largeDone string) {
	events, bytes, err := decodeHistorySized(provider.OpAckOrchestrationItem, instance, execution, added)
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[instance]
	if err != nil || e == nil || e.token != token || e.execution != execution {
		c.removeLocked(instance)
		return
	}
	// Never writes inside a slice handed out: lookup clips them.
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

// markHistoryWritten sets a fresh history mark on instance's lock row,
// creating it if need be, after history was written outside turns. It moves
// the version on, so a fetch that read the row before fails its lock write
// rather than copy the old mark back. One UpdateItem.
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

// historyAfterCached returns the history when the cache holds its start
// (prefix), reading only the rows after it with one Query. ok is false when
// those rows do not follow it event by event up to lock's end (a racing
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
