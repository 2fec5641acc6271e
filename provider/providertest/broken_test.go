package providertest_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/provider/memprovider"
)

// This file holds providers that break one rule of the contract each, for
// TestSuiteCatchesBrokenProviders. Each wraps memprovider and changes one
// method; everything else it forwards, optional interfaces included.

// healthy forwards everything to memprovider.
type healthy struct{ *memprovider.Provider }

// shortPolling ignores poll timeouts, as a short-polling provider does.
type shortPolling struct{ *memprovider.Provider }

func (p shortPolling) FetchOrchestrationItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, filter *provider.CapabilityFilter) (*provider.OrchestrationItem, error) {
	return p.Provider.FetchOrchestrationItem(ctx, lockTimeout, 0, filter)
}

func (p shortPolling) FetchWorkItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, session *provider.SessionFetchConfig, tags provider.TagFilter) (*provider.LockedWorkItem, error) {
	return p.Provider.FetchWorkItem(ctx, lockTimeout, 0, session, tags)
}

// firesTimersAtOnce makes every timer an ack enqueues visible at once,
// whatever its FireAtMs.
type firesTimersAtOnce struct{ *memprovider.Provider }

func (p firesTimersAtOnce) AckOrchestrationItem(ctx context.Context, lockToken string, commit provider.TurnCommit) error {
	commit.OrchestratorItems = slices.Clone(commit.OrchestratorItems)
	for i, item := range commit.OrchestratorItems {
		if timer, ok := item.(provider.TimerFiredItem); ok {
			timer.FireAtMs = 0
			commit.OrchestratorItems[i] = timer
		}
	}
	return p.Provider.AckOrchestrationItem(ctx, lockToken, commit)
}

// honoursTenthOfEnqueueDelay hides orchestrator messages enqueued with a
// delay for a tenth of it.
type honoursTenthOfEnqueueDelay struct{ *memprovider.Provider }

func (p honoursTenthOfEnqueueDelay) EnqueueForOrchestrator(ctx context.Context, item provider.WorkItem, delay time.Duration) error {
	return p.Provider.EnqueueForOrchestrator(ctx, item, delay/10)
}

// ignoresWorkerAbandonDelay makes abandoned activities visible at once.
type ignoresWorkerAbandonDelay struct{ *memprovider.Provider }

func (p ignoresWorkerAbandonDelay) AbandonWorkItem(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool) error {
	return p.Provider.AbandonWorkItem(ctx, lockToken, 0, ignoreAttempt)
}

// ignoresOrchestrationAbandonDelay makes an abandoned instance's messages
// visible at once.
type ignoresOrchestrationAbandonDelay struct{ *memprovider.Provider }

func (p ignoresOrchestrationAbandonDelay) AbandonOrchestrationItem(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool) error {
	return p.Provider.AbandonOrchestrationItem(ctx, lockToken, 0, ignoreAttempt)
}

// expiresOrchestrationLocksAtHalf grants orchestration locks for half the
// lock timeout asked for.
type expiresOrchestrationLocksAtHalf struct{ *memprovider.Provider }

func (p expiresOrchestrationLocksAtHalf) FetchOrchestrationItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, filter *provider.CapabilityFilter) (*provider.OrchestrationItem, error) {
	return p.Provider.FetchOrchestrationItem(ctx, lockTimeout/2, pollTimeout, filter)
}

// renewAlwaysFails rejects every orchestration lock renewal.
type renewAlwaysFails struct{ *memprovider.Provider }

func (p renewAlwaysFails) RenewOrchestrationItemLock(ctx context.Context, lockToken string, extendFor time.Duration) error {
	return provider.Permanent(provider.OpRenewOrchestrationItemLock, provider.ErrInvalidLockToken, "Invalid lock token")
}

// renewDoesNotExtend accepts the renewal of a live orchestration lock, and
// rejects that of an unknown or expired one, but never extends a lock.
type renewDoesNotExtend struct {
	*memprovider.Provider
	mu sync.Mutex
	// expires maps a lock token to the instant its lock runs out.
	expires map[string]time.Time
}

func newRenewDoesNotExtend() *renewDoesNotExtend {
	return &renewDoesNotExtend{Provider: memprovider.New(), expires: map[string]time.Time{}}
}

func (p *renewDoesNotExtend) FetchOrchestrationItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, filter *provider.CapabilityFilter) (*provider.OrchestrationItem, error) {
	item, err := p.Provider.FetchOrchestrationItem(ctx, lockTimeout, pollTimeout, filter)
	if item != nil {
		p.mu.Lock()
		p.expires[item.LockToken] = time.Now().Add(lockTimeout)
		p.mu.Unlock()
	}
	return item, err
}

func (p *renewDoesNotExtend) RenewOrchestrationItemLock(ctx context.Context, lockToken string, extendFor time.Duration) error {
	p.mu.Lock()
	expires, ok := p.expires[lockToken]
	p.mu.Unlock()
	if !ok || !time.Now().Before(expires) {
		return provider.Permanent(provider.OpRenewOrchestrationItemLock, provider.ErrInvalidLockToken, "Invalid lock token: invalid, expired, or already acked")
	}
	return nil
}

// collapsesSessionOwners encodes session owner ids ambiguously: "owner#"
// and "owner" name the same owner.
type collapsesSessionOwners struct{ *memprovider.Provider }

func (p collapsesSessionOwners) FetchWorkItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, session *provider.SessionFetchConfig, tags provider.TagFilter) (*provider.LockedWorkItem, error) {
	if session != nil {
		collapsed := *session
		collapsed.OwnerID = strings.TrimRight(collapsed.OwnerID, "#")
		session = &collapsed
	}
	return p.Provider.FetchWorkItem(ctx, lockTimeout, pollTimeout, session, tags)
}

func (p collapsesSessionOwners) RenewSessionLock(ctx context.Context, ownerIDs []string, extendFor, idleTimeout time.Duration) (int, error) {
	collapsed := make([]string, len(ownerIDs))
	for i, id := range ownerIDs {
		collapsed[i] = strings.TrimRight(id, "#")
	}
	return p.Provider.RenewSessionLock(ctx, collapsed, extendFor, idleTimeout)
}

// keepsClearedStoreRows has a terminal KV merge that writes the values an
// execution set into the store but never deletes a store entry: keys an
// execution cleared (one by one or all at once) stay in the store once it
// finishes. With replaysSets it also writes values the execution set and
// then cleared itself. It keeps those entries (ghosts) itself and shows them where
// such a store would: in fetch snapshots, and in client reads unless the
// current execution has cleared them.
type keepsClearedStoreRows struct {
	*memprovider.Provider
	mu sync.Mutex
	// locked maps a lock token to its instance and the store (without
	// ghosts) its fetch saw.
	locked map[string]lockedTurn
	// delta is each instance's KV writes since its last finished
	// execution.
	delta map[string]*provider.KVDelta
	// ghosts are the store entries a correct merge deleted, per instance.
	ghosts map[string]map[string]provider.KVEntry
	// replaysSets makes the merge worse: it writes every value the
	// execution set, even those it cleared again; sets holds them.
	replaysSets bool
	sets        map[string]map[string]provider.KVEntry
}

type lockedTurn struct {
	instance string
	store    map[string]provider.KVEntry
}

func newKeepsClearedStoreRows(replaysSets bool) *keepsClearedStoreRows {
	return &keepsClearedStoreRows{
		Provider:    memprovider.New(),
		locked:      map[string]lockedTurn{},
		delta:       map[string]*provider.KVDelta{},
		ghosts:      map[string]map[string]provider.KVEntry{},
		replaysSets: replaysSets,
		sets:        map[string]map[string]provider.KVEntry{},
	}
}

func (p *keepsClearedStoreRows) FetchOrchestrationItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, filter *provider.CapabilityFilter) (*provider.OrchestrationItem, error) {
	item, err := p.Provider.FetchOrchestrationItem(ctx, lockTimeout, pollTimeout, filter)
	if item == nil {
		return item, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.locked[item.LockToken] = lockedTurn{item.Instance, maps.Clone(item.KVSnapshot)}
	snapshot := maps.Clone(item.KVSnapshot)
	if snapshot == nil {
		snapshot = map[string]provider.KVEntry{}
	}
	for key, entry := range p.ghosts[item.Instance] {
		snapshot[key] = entry
	}
	item.KVSnapshot = snapshot
	return item, nil
}

func (p *keepsClearedStoreRows) AckOrchestrationItem(ctx context.Context, lockToken string, commit provider.TurnCommit) error {
	if err := p.Provider.AckOrchestrationItem(ctx, lockToken, commit); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	turn := p.locked[lockToken]
	delete(p.locked, lockToken)
	d := p.delta[turn.instance]
	if d == nil {
		d = &provider.KVDelta{}
		p.delta[turn.instance] = d
	}
	d.Apply(commit.HistoryDelta)
	for _, e := range commit.HistoryDelta {
		if set, ok := e.Kind.(provider.KeyValueSet); ok {
			if p.sets[turn.instance] == nil {
				p.sets[turn.instance] = map[string]provider.KVEntry{}
			}
			p.sets[turn.instance][set.Key] = provider.KVEntry{Value: set.Value, LastUpdatedAtMs: set.LastUpdatedAtMs}
		}
	}
	if !provider.IsTerminalStatus(commit.Metadata.Status) {
		return nil
	}
	// The broken store: the old store with its ghosts, overlaid by the
	// values set, nothing deleted. What a correct merge keeps is real.
	broken := maps.Clone(turn.store)
	if broken == nil {
		broken = map[string]provider.KVEntry{}
	}
	maps.Copy(broken, p.ghosts[turn.instance])
	for key, entry := range d.Entries {
		if entry != nil {
			broken[key] = *entry
		}
	}
	if p.replaysSets {
		for key, entry := range p.sets[turn.instance] {
			if _, setLast := d.Entries[key]; !setLast || d.Entries[key] == nil {
				broken[key] = entry
			}
		}
	}
	real := provider.MergeKV(turn.store, *d)
	ghosts := map[string]provider.KVEntry{}
	for key, entry := range broken {
		if _, ok := real[key]; !ok {
			ghosts[key] = entry
		}
	}
	p.ghosts[turn.instance] = ghosts
	p.delta[turn.instance] = &provider.KVDelta{}
	delete(p.sets, turn.instance)
	return nil
}

// visibleGhosts returns the ghosts of instance that client reads show:
// those the current execution has not cleared. Callers hold p.mu.
func (p *keepsClearedStoreRows) visibleGhosts(instance string) map[string]provider.KVEntry {
	out := map[string]provider.KVEntry{}
	d := p.delta[instance]
	if d != nil && d.ClearedAll {
		return out
	}
	for key, entry := range p.ghosts[instance] {
		if d != nil {
			if _, touched := d.Entries[key]; touched {
				continue
			}
		}
		out[key] = entry
	}
	return out
}

func (p *keepsClearedStoreRows) KVValue(ctx context.Context, instance, key string) (string, bool, error) {
	value, ok, err := p.Provider.KVValue(ctx, instance, key)
	if err != nil || ok {
		return value, ok, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	entry, ok := p.visibleGhosts(instance)[key]
	return entry.Value, ok, nil
}

func (p *keepsClearedStoreRows) KVValues(ctx context.Context, instance string) (map[string]string, error) {
	values, err := p.Provider.KVValues(ctx, instance)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for key, entry := range p.visibleGhosts(instance) {
		if _, ok := values[key]; !ok {
			values[key] = entry.Value
		}
	}
	return values, nil
}

func (p *keepsClearedStoreRows) DeleteInstancesAtomic(ctx context.Context, ids []string, force bool) (provider.DeleteInstanceResult, error) {
	res, err := p.Provider.DeleteInstancesAtomic(ctx, ids, force)
	if err == nil {
		p.mu.Lock()
		for _, id := range ids {
			delete(p.ghosts, id)
			delete(p.delta, id)
			delete(p.sets, id)
		}
		p.mu.Unlock()
	}
	return res, err
}

// doesNothing accepts every call and stores nothing: every read finds
// nothing, every fetch returns no work.
type doesNothing struct{}

func (doesNothing) FetchOrchestrationItem(context.Context, time.Duration, time.Duration, *provider.CapabilityFilter) (*provider.OrchestrationItem, error) {
	return nil, nil
}

func (doesNothing) AckOrchestrationItem(context.Context, string, provider.TurnCommit) error {
	return nil
}

func (doesNothing) AbandonOrchestrationItem(context.Context, string, time.Duration, bool) error {
	return nil
}

func (doesNothing) RenewOrchestrationItemLock(context.Context, string, time.Duration) error {
	return nil
}

func (doesNothing) Read(context.Context, string) ([]provider.Event, error) {
	return []provider.Event{}, nil
}

func (doesNothing) ReadWithExecution(context.Context, string, uint64) ([]provider.Event, error) {
	return []provider.Event{}, nil
}

func (doesNothing) AppendWithExecution(context.Context, string, uint64, []provider.Event) error {
	return nil
}

func (doesNothing) EnqueueForWorker(context.Context, provider.ActivityExecuteItem) error {
	return nil
}

func (doesNothing) FetchWorkItem(context.Context, time.Duration, time.Duration, *provider.SessionFetchConfig, provider.TagFilter) (*provider.LockedWorkItem, error) {
	return nil, nil
}

func (doesNothing) AckWorkItem(context.Context, string, provider.WorkItem) error { return nil }

func (doesNothing) RenewWorkItemLock(context.Context, string, time.Duration) error { return nil }

func (doesNothing) AbandonWorkItem(context.Context, string, time.Duration, bool) error { return nil }

func (doesNothing) RenewSessionLock(context.Context, []string, time.Duration, time.Duration) (int, error) {
	return 0, nil
}

func (doesNothing) CleanupOrphanedSessions(context.Context, time.Duration) (int, error) {
	return 0, nil
}

func (doesNothing) EnqueueForOrchestrator(context.Context, provider.WorkItem, time.Duration) error {
	return nil
}

func (doesNothing) CustomStatus(context.Context, string, uint64) (*provider.CustomStatus, error) {
	return nil, nil
}

func (doesNothing) KVValue(context.Context, string, string) (string, bool, error) {
	return "", false, nil
}

func (doesNothing) KVValues(context.Context, string) (map[string]string, error) {
	return map[string]string{}, nil
}

func (doesNothing) InstanceStats(context.Context, string) (*provider.SystemStats, error) {
	return nil, nil
}

// Every broken provider but doesNothing keeps memprovider's optional
// interfaces; the variants that drop Admin wrap it in withoutAdmin.
var (
	_ provider.Admin    = healthy{}
	_ provider.Admin    = (*keepsClearedStoreRows)(nil)
	_ provider.Admin    = (*renewDoesNotExtend)(nil)
	_ provider.Provider = doesNothing{}
)

// withoutAdmin hides every optional interface of the provider it holds, as
// a wrapper that forgets to forward them does.
type withoutAdmin struct{ provider.Provider }

// stallingScheduler is a correct provider on a machine whose scheduler
// stalls the test: once per instance it delays the first activity fetch
// after a delayed abandon of that instance's activity until the delay has
// passed, and once per run it delays the first session renewal after the
// renewal of a session's activity until the idle timeout has passed. Each stall pushes one
// observation out of the window it tests; the suite must discard it and
// try again, not fail.
type stallingScheduler struct {
	*memprovider.Provider
	stalls *stalls

	mu sync.Mutex
	// locked maps activity lock tokens to their activities.
	locked map[string]provider.ActivityExecuteItem
	// fetchStall and renewStall are the stalls due on this provider.
	fetchStall time.Duration
	renewStall bool
}

// stalls records which stalls a run has already had, across providers.
type stalls struct {
	mu        sync.Mutex
	instances map[string]bool
	renewal   bool
}

// first reports whether this is the first stall for instance ("" for the
// renewal stall), and records it.
func (s *stalls) first(instance string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if instance == "" {
		first := !s.renewal
		s.renewal = true
		return first
	}
	first := !s.instances[instance]
	s.instances[instance] = true
	return first
}

func newStallingScheduler(s *stalls) *stallingScheduler {
	return &stallingScheduler{Provider: memprovider.New(), stalls: s, locked: map[string]provider.ActivityExecuteItem{}}
}

// stall sleeps for d or until ctx ends.
func stall(ctx context.Context, d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
}

func (p *stallingScheduler) FetchWorkItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, session *provider.SessionFetchConfig, tags provider.TagFilter) (*provider.LockedWorkItem, error) {
	p.mu.Lock()
	d := p.fetchStall
	p.fetchStall = 0
	p.mu.Unlock()
	stall(ctx, d)
	w, err := p.Provider.FetchWorkItem(ctx, lockTimeout, pollTimeout, session, tags)
	if w != nil {
		p.mu.Lock()
		p.locked[w.LockToken] = w.Item
		p.mu.Unlock()
	}
	return w, err
}

func (p *stallingScheduler) AbandonWorkItem(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool) error {
	p.mu.Lock()
	instance := p.locked[lockToken].Instance
	p.mu.Unlock()
	if err := p.Provider.AbandonWorkItem(ctx, lockToken, delay, ignoreAttempt); err != nil {
		return err
	}
	if delay > 0 && p.stalls.first(instance) {
		p.mu.Lock()
		p.fetchStall = delay + 100*time.Millisecond
		p.mu.Unlock()
	}
	return nil
}

func (p *stallingScheduler) RenewWorkItemLock(ctx context.Context, lockToken string, extendFor time.Duration) error {
	p.mu.Lock()
	inSession := p.locked[lockToken].SessionID != nil
	p.mu.Unlock()
	if err := p.Provider.RenewWorkItemLock(ctx, lockToken, extendFor); err != nil {
		return err
	}
	if inSession && p.stalls.first("") {
		p.mu.Lock()
		p.renewStall = true
		p.mu.Unlock()
	}
	return nil
}

func (p *stallingScheduler) RenewSessionLock(ctx context.Context, ownerIDs []string, extendFor, idleTimeout time.Duration) (int, error) {
	p.mu.Lock()
	due := p.renewStall
	p.renewStall = false
	p.mu.Unlock()
	if due {
		stall(ctx, idleTimeout+100*time.Millisecond)
	}
	return p.Provider.RenewSessionLock(ctx, ownerIDs, extendFor, idleTimeout)
}

// readsFirstExecution answers Admin's history reads from execution 1 and
// reports 1 as the latest execution, whatever the instance has.
type readsFirstExecution struct{ *memprovider.Provider }

func (p readsFirstExecution) ReadHistory(ctx context.Context, instance string) ([]provider.Event, error) {
	return p.Provider.ReadHistoryWithExecutionID(ctx, instance, provider.InitialExecutionID)
}

func (p readsFirstExecution) LatestExecutionID(ctx context.Context, instance string) (uint64, error) {
	return provider.InitialExecutionID, nil
}

// lagsListings answers ListInstances, ListInstancesByStatus, SystemMetrics
// and QueueDepths as they were lag ago, as a listing served by an
// eventually consistent index does: each call records the current answer
// and returns the newest recorded at least lag ago (the answer at creation
// when none is that old). Work discovery is current.
type lagsListings struct {
	*memprovider.Provider
	lag     time.Duration
	mu      sync.Mutex
	answers map[string][]lagged
}

// lagged is one recorded answer of a listing.
type lagged struct {
	at     time.Time
	answer any
}

// newLagsListings wraps a fresh memprovider whose listings lag by lag.
func newLagsListings(lag time.Duration) *lagsListings {
	p := &lagsListings{Provider: memprovider.New(), lag: lag, answers: map[string][]lagged{}}
	ctx := context.Background()
	p.ListInstances(ctx)
	for _, s := range []string{provider.StatusRunning, provider.StatusCompleted, provider.StatusFailed, provider.StatusContinuedAsNew} {
		p.ListInstancesByStatus(ctx, s)
	}
	p.SystemMetrics(ctx)
	p.QueueDepths(ctx)
	return p
}

// view records answer as the current answer of call and returns the one
// the lagging listing shows.
func lagView[T any](p *lagsListings, call string, answer T, err error) (T, error) {
	if err != nil {
		return answer, err
	}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	list := append(p.answers[call], lagged{now, answer})
	p.answers[call] = list
	shown := list[0]
	for _, a := range list {
		if !a.at.After(now.Add(-p.lag)) {
			shown = a
		}
	}
	return shown.answer.(T), nil
}

func (p *lagsListings) ListInstances(ctx context.Context) ([]string, error) {
	ids, err := p.Provider.ListInstances(ctx)
	return lagView(p, "ListInstances", ids, err)
}

func (p *lagsListings) ListInstancesByStatus(ctx context.Context, status string) ([]string, error) {
	ids, err := p.Provider.ListInstancesByStatus(ctx, status)
	return lagView(p, "ListInstancesByStatus/"+status, ids, err)
}

func (p *lagsListings) SystemMetrics(ctx context.Context) (provider.SystemMetrics, error) {
	m, err := p.Provider.SystemMetrics(ctx)
	return lagView(p, "SystemMetrics", m, err)
}

func (p *lagsListings) QueueDepths(ctx context.Context) (provider.QueueDepths, error) {
	d, err := p.Provider.QueueDepths(ctx)
	return lagView(p, "QueueDepths", d, err)
}
