package memprovider

import (
	"context"

	"github.com/duradyn/duradyn/provider"
)

// CustomStatus returns the instance's custom status and its version when
// the version is above lastSeenVersion; nil otherwise, and for unknown
// instances.
func (p *Provider) CustomStatus(ctx context.Context, instance string, lastSeenVersion uint64) (*provider.CustomStatus, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	inst := p.instances[instance]
	if inst == nil || !inst.hasRow || inst.customStatusVersion <= lastSeenVersion {
		return nil, nil
	}
	return &provider.CustomStatus{Status: cloneString(inst.customStatus), Version: inst.customStatusVersion}, nil
}

// liveKV returns the instance's KV store overlaid by the current
// execution's writes. Callers hold p.mu.
func (p *Provider) liveKV(instance string) map[string]provider.KVEntry {
	inst := p.instances[instance]
	if inst == nil {
		return map[string]provider.KVEntry{}
	}
	return provider.MergeKV(inst.kvStore, inst.kvDelta)
}

// KVValue returns one key as clients see it (the current execution's writes
// included); ok is false when the key or the instance does not exist.
func (p *Provider) KVValue(ctx context.Context, instance, key string) (string, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.liveKV(instance)[key]
	return e.Value, ok, nil
}

// KVValues returns every live key as clients see it; empty for unknown
// instances.
func (p *Provider) KVValues(ctx context.Context, instance string) (map[string]string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	live := p.liveKV(instance)
	out := make(map[string]string, len(live))
	for k, e := range live {
		out[k] = e.Value
	}
	return out, nil
}

// InstanceStats describes the instance's current execution: its event
// count, the summed length of the stored event JSON, the carry-forward
// events its OrchestrationStarted holds, and the live KV keys and value
// bytes. Unknown instances return nil. An undecodable OrchestrationStarted
// fails with an error wrapping [provider.ErrCorruptData].
func (p *Provider) InstanceStats(ctx context.Context, instance string) (*provider.SystemStats, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	inst := p.instances[instance]
	if inst == nil || !inst.hasRow {
		return nil, nil
	}
	stats := &provider.SystemStats{}
	for _, e := range inst.history[inst.currentExecution] {
		if err := stats.CountEvent(provider.OpInstanceStats, instance, e.id, e.data); err != nil {
			return nil, err
		}
	}
	stats.CountKV(p.liveKV(instance))
	return stats, nil
}
