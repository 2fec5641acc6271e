package memprovider

import "fmt"

// CorruptHistory replaces every stored history event of instance, in every
// execution, with JSON of an event kind this version does not know, keeping
// the event ids. It reports whether the instance had any history.
func CorruptHistory(p *Provider, instance string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	inst := p.instances[instance]
	if inst == nil {
		return false
	}
	found := false
	for _, h := range inst.history {
		for i := range h {
			h[i].decoded = nil
			h[i].data = fmt.Appendf(nil, `{"event_id":%d,"source_event_id":null,"instance_id":%q,"execution_id":0,"timestamp_ms":0,"duroxide_version":"99.0.0","type":"FutureEventKind"}`, h[i].id, instance)
			found = true
		}
	}
	return found
}

// MaxAttemptCount returns the highest attempt count over the orchestrator
// queue messages of instance (0 when it has none).
func MaxAttemptCount(p *Provider, instance string) uint32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var n uint32
	for _, m := range p.orchQ {
		if m.instance == instance {
			n = max(n, m.attempts)
		}
	}
	return n
}

// SetWaitHook makes every long poll of p call hook just before it waits.
// Call it before p is shared between goroutines.
func SetWaitHook(p *Provider, hook func()) {
	p.waitHook = hook
}
