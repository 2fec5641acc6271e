package dynamo

import (
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// maxCachedTurns bounds the turn cache; beyond it the oldest entries go
// (their acks then read the lock row first: two requests instead of one).
const maxCachedTurns = 4096

// turnState is what a fetch of this process knows about the turn it
// locked.
type turnState struct {
	// mu serialises acks of the turn in this process; done is set once one
	// committed, so a concurrent duplicate fails as a second ack must.
	mu    sync.Mutex
	done  bool
	token string
	st    *instanceState
	// ver is the lock row's version after the fetch.
	ver uint64
	// batch holds the sort keys of the locked messages.
	batch []string
	// attempts is the lock row's attempt map after the fetch.
	attempts map[string]uint32

	// digest and input remember the last ack transaction sent for this
	// turn, so that a retried ack resends it unchanged (same
	// ClientRequestToken, same parameters).
	digest string
	input  *dynamodb.TransactWriteItemsInput
}

// turnCache maps lock tokens to turn states.
type turnCache struct {
	mu    sync.Mutex
	m     map[string]*turnState
	order []string
}

func newTurnCache() turnCache { return turnCache{m: map[string]*turnState{}} }

func (c *turnCache) put(t *turnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[t.token]; !ok {
		c.order = append(c.order, t.token)
	}
	c.m[t.token] = t
	for len(c.m) > maxCachedTurns && len(c.order) > 0 {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
	if len(c.order) > 2*maxCachedTurns {
		kept := c.order[:0]
		for _, tok := range c.order {
			if _, ok := c.m[tok]; ok {
				kept = append(kept, tok)
			}
		}
		c.order = kept
	}
}

func (c *turnCache) get(token string) *turnState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[token]
}

func (c *turnCache) drop(token string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, token)
}

// hints remembers, for a short while, instances whose lock another
// dispatcher holds and sessions another owner holds, so that sweeps do not
// spend a request on each of them every time. A hint only ever causes a
// skip until its expiry; it is never a reason to act.
type hints struct {
	mu       sync.Mutex
	locked   map[string]int64 // instance → lock expiry (ms)
	sessions map[string]sessionHint
}

type sessionHint struct {
	owner string
	until int64
}

func newHints() hints {
	return hints{locked: map[string]int64{}, sessions: map[string]sessionHint{}}
}

// maxLockHintMs caps how long a lock seen in another process is trusted:
// its holder may release it early, and until a signal or this cap, sweeps
// of this process pass over the instance.
const maxLockHintMs = 1000

// lockedUntil records, at nowMs, that instance is locked until untilMs.
func (h *hints) lockedUntil(instance string, nowMs, untilMs int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.locked[instance] = min(untilMs, nowMs+maxLockHintMs)
	if len(h.locked) > maxCachedTurns {
		clear(h.locked)
	}
}

// unlocked forgets instance's lock.
func (h *hints) unlocked(instance string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.locked, instance)
}

// isLocked reports whether instance is known to be locked at nowMs.
func (h *hints) isLocked(instance string, nowMs int64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.locked[instance] > nowMs
}

// sessionOwned records that owner holds session until untilMs.
func (h *hints) sessionOwned(session, owner string, untilMs int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sessions[session] = sessionHint{owner: owner, until: untilMs}
	if len(h.sessions) > maxCachedTurns {
		clear(h.sessions)
	}
}

// sessionBlocked reports whether session is known to be held by someone
// other than owner at nowMs.
func (h *hints) sessionBlocked(session, owner string, nowMs int64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.sessions[session]
	return ok && s.until > nowMs && s.owner != owner
}
