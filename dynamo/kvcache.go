package dynamo

import (
	"container/list"
	"sync"

	"github.com/duradyn/duradyn/provider"
)

// kvCache keeps, per instance, the last KV state this process read or
// planned a turn to leave, under its digest (kvDigest), so that fetches
// and acks do not read the KV rows: a fetch takes its snapshot from the
// entry when the lock row records the entry's store (which changes only
// when an execution ends, so one read serves the execution's every turn,
// whichever process runs them), and an ack that rewrites KV rows plans on
// the entry when the lock row records the entry's whole state.
//
// Entries are addressed by content: an entry is right for any lock row
// whose digest it matches, whoever wrote that row, so nothing needs
// invalidating, and an entry a turn planned but did not commit is right
// too (for a state no lock row records). Rows edited by hand are seen
// once a process without the entry reads them.
//
// The maps of an entry are never modified: callers clone what they change.
type kvCache struct {
	mu      sync.Mutex
	entries map[string]*list.Element // of *kvEntry, by instance
	order   list.List                // least recently used first
	bytes   int
}

// kvEntry is one instance's cached KV state.
type kvEntry struct {
	instance string
	// digest is kvDigest of store and delta.
	digest string
	store  map[string]provider.KVEntry
	delta  provider.KVDelta
	bytes  int
}

// maxKVCacheBytes and maxKVCacheEntries bound the cache; the least
// recently used entries go first. A state larger than maxKVEntryBytes is
// not kept (its instance's turns read it). Bytes are the keys' and values'
// lengths.
const (
	maxKVCacheBytes   = 64 << 20
	maxKVCacheEntries = 4096
	maxKVEntryBytes   = maxKVCacheBytes / 8
)

// store returns the cached store of instance when its digest is
// storeDigest (storeDigestOf a lock row's digest).
func (c *kvCache) store(instance, storeDigest string) (map[string]provider.KVEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.lookupLocked(instance)
	if e == nil || storeDigest == "" || storeDigestOf(e.digest) != storeDigest {
		return nil, false
	}
	return e.store, true
}

// state returns the cached KV state of instance when its digest is digest
// (a lock row's).
func (c *kvCache) state(instance, digest string) (map[string]provider.KVEntry, provider.KVDelta, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.lookupLocked(instance)
	if e == nil || digest == "" || e.digest != digest {
		return nil, provider.KVDelta{}, false
	}
	return e.store, e.delta, true
}

// lookupLocked returns instance's entry, marked as used; c.mu is held.
func (c *kvCache) lookupLocked(instance string) *kvEntry {
	el := c.entries[instance]
	if el == nil {
		return nil
	}
	c.order.MoveToBack(el)
	return el.Value.(*kvEntry)
}

// put records that instance's KV state of digest is store and delta,
// which the caller no longer modifies.
func (c *kvCache) put(instance, digest string, store map[string]provider.KVEntry, delta provider.KVDelta) {
	size := kvBytes(store, delta)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]*list.Element{}
	}
	if el := c.entries[instance]; el != nil {
		c.removeLocked(el)
	}
	if size > maxKVEntryBytes {
		return
	}
	c.entries[instance] = c.order.PushBack(&kvEntry{instance: instance, digest: digest, store: store, delta: delta, bytes: size})
	c.bytes += size
	for c.order.Len() > maxKVCacheEntries || c.bytes > maxKVCacheBytes {
		c.removeLocked(c.order.Front())
	}
}

// removeLocked drops an entry; c.mu is held.
func (c *kvCache) removeLocked(el *list.Element) {
	e := c.order.Remove(el).(*kvEntry)
	delete(c.entries, e.instance)
	c.bytes -= e.bytes
}

// kvBytes approximates the memory of a KV state: its keys and values.
func kvBytes(store map[string]provider.KVEntry, delta provider.KVDelta) int {
	n := 0
	for k, e := range store {
		n += len(k) + len(e.Value)
	}
	for k, e := range delta.Entries {
		n += len(k)
		if e != nil {
			n += len(e.Value)
		}
	}
	return n
}
