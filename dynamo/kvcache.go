package dynamo

import (
	"container/list"
	"sync"

	"github.com/duradyn/duradyn/provider"
)

// kvCache keeps, per instance, the last KV state this process read or
// planned, under its digest, so that fetches and acks need not read the KV
// rows (docs/reads.md, KV snapshot). Entries are addressed by content, so
// nothing invalidates them. An entry's maps are never modified: callers
// clone what they change.
type kvCache struct {
	mu      sync.Mutex
	entries map[string]*list.Element // of *kvEntry, by instance
	order   list.List                // least recently used first
	bytes   int
}

// kvEntry is one instance's cached KV state.
type kvEntry struct {
	instance string
	digest   string // kvDigest of store and delta
	store    map[string]provider.KVEntry
	delta    provider.KVDelta
	bytes    int
}

// Cache bounds (least recently used out), in keys' and values' bytes; a
// state over maxKVEntryBytes is not kept.
const (
	maxKVCacheBytes   = 64 << 20
	maxKVCacheEntries = 4096
	maxKVEntryBytes   = maxKVCacheBytes / 8
)

// store returns instance's cached store if its digest is storeDigest.
func (c *kvCache) store(instance, storeDigest string) (map[string]provider.KVEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.lookupLocked(instance)
	if e == nil || storeDigest == "" || storeDigestOf(e.digest) != storeDigest {
		return nil, false
	}
	return e.store, true
}

// state returns instance's cached KV state if its digest is digest.
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

// put caches instance's state of digest; the caller no longer modifies it.
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
