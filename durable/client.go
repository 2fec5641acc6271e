package durable

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/duradyn/duradyn/provider"
)

// Default polling of the client's Wait methods.
const (
	defaultPollInitial = 5 * time.Millisecond
	defaultPollMax     = 100 * time.Millisecond
)

// ClientOptions configures a [Client].
type ClientOptions struct {
	// PollInitial is the wait between the first two polls of the Wait
	// methods; it doubles after every poll up to PollMax. Default 5ms
	// (also when zero or negative).
	PollInitial time.Duration
	// PollMax caps the wait between polls. Default 100ms (also when zero
	// or negative); raised to PollInitial when below it.
	PollMax time.Duration
}

// withDefaults returns o with defaults applied and invalid values fixed.
func (o ClientOptions) withDefaults() ClientOptions {
	if o.PollInitial <= 0 {
		o.PollInitial = defaultPollInitial
	}
	if o.PollMax <= 0 {
		o.PollMax = defaultPollMax
	}
	o.PollMax = max(o.PollMax, o.PollInitial)
	return o
}

// Client starts, signals, inspects and manages orchestration instances. It
// talks to the runtime only through the provider, so it works from any
// process, with or without a running runtime. Management methods need a
// provider that implements [provider.Admin]; on others they fail with
// [ErrManagementNotAvailable].
//
// Errors wrap the provider's, so its sentinels ([provider.ErrNotFound],
// [provider.ErrStillRunning], [provider.ErrSubOrchestration],
// [provider.ErrInvalidInput], ...) match with [errors.Is]. The Wait methods
// poll until ctx ends and then return an error wrapping ctx.Err().
//
// A Client is safe for concurrent use.
type Client struct {
	p     provider.Provider
	admin provider.Admin // nil when p has no management capability
	// reader reads an instance's status without its history; nil when p
	// cannot.
	reader provider.StatusReader
	opts   ClientOptions
}

// NewClient returns a client over p, which must not be nil, configured by
// optFns. It does no I/O.
func NewClient(p provider.Provider, optFns ...func(*ClientOptions)) *Client {
	var o ClientOptions
	for _, fn := range optFns {
		if fn != nil {
			fn(&o)
		}
	}
	c := &Client{p: p, opts: o.withDefaults()}
	if a, ok := provider.AdminOf(p); ok {
		c.admin = a
	}
	if r, ok := p.(provider.StatusReader); ok {
		c.reader = r
	}
	return c
}

// Provider returns the provider the client uses.
func (c *Client) Provider() provider.Provider { return c.p }

// StartOrchestration enqueues the start of instance instanceID running the
// orchestration name with input in (encoded as JSON unless it is a [Raw]
// or json.RawMessage). Options: [Version] pins the orchestration version;
// without it the runtime's registry policy picks one. There is no
// duplicate check, so give every instance a fresh id: a start sent to an
// id that already has history does not start it again. An empty
// instanceID or name, or an input that cannot be encoded, fails with an
// error wrapping [provider.ErrInvalidInput] and enqueues nothing.
func (c *Client) StartOrchestration(ctx context.Context, instanceID, name string, in any, opts ...Option) error {
	op := clientOp("start", instanceID)
	if err := checkInstanceID(op, instanceID); err != nil {
		return err
	}
	if err := checkNonEmpty(op, "orchestration name", name); err != nil {
		return err
	}
	input, err := encodePayload(op, in)
	if err != nil {
		return err
	}
	o := applyOptions(opts)
	item := provider.StartOrchestrationItem{
		Instance:      instanceID,
		Orchestration: name,
		Input:         input,
		Version:       o.version,
		ExecutionID:   provider.InitialExecutionID,
	}
	return c.enqueue(ctx, op, item)
}

// RaiseEvent delivers the external event name with payload data (encoded as
// for [Client.StartOrchestration]) to instance instanceID. An event that
// arrives before the orchestration's [WaitForEvent] is recorded in its
// history is recorded but never delivered (duroxide's rule): raise only
// once the instance waits, which [Client.WaitForSubscription] waits for,
// or, for messages that must not be lost, send with [Client.EnqueueEvent]
// to a queue the orchestration reads with [Dequeue], which keeps messages
// until they are taken. One sent to a finished instance is dropped. An
// empty instanceID or name fails with an error wrapping
// [provider.ErrInvalidInput].
func (c *Client) RaiseEvent(ctx context.Context, instanceID, name string, data any) error {
	op := clientOp("raise event", instanceID)
	if err := checkInstanceID(op, instanceID); err != nil {
		return err
	}
	if err := checkNonEmpty(op, "event name", name); err != nil {
		return err
	}
	payload, err := encodePayload(op, data)
	if err != nil {
		return err
	}
	return c.enqueue(ctx, op, provider.ExternalRaisedItem{Instance: instanceID, Name: name, Data: payload})
}

// EnqueueEvent puts a message with payload data (encoded as for
// [Client.StartOrchestration]) on the FIFO mailbox queue of instance
// instanceID. Messages wait until the orchestration dequeues them and
// survive continue-as-new; those sent to an instance that never starts are
// dropped. An empty instanceID or queue fails with an error wrapping
// [provider.ErrInvalidInput].
func (c *Client) EnqueueEvent(ctx context.Context, instanceID, queue string, data any) error {
	op := clientOp("enqueue event", instanceID)
	if err := checkInstanceID(op, instanceID); err != nil {
		return err
	}
	if err := checkNonEmpty(op, "queue name", queue); err != nil {
		return err
	}
	payload, err := encodePayload(op, data)
	if err != nil {
		return err
	}
	return c.enqueue(ctx, op, provider.QueueMessageItem{Instance: instanceID, Name: queue, Data: payload})
}

// CancelInstance asks instance instanceID to cancel: its next turn fails it
// with an application error of kind Cancelled carrying reason, and its
// sub-orchestrations are cancelled too. Cancelling a finished or unknown
// instance does nothing. An empty instanceID fails with an error wrapping
// [provider.ErrInvalidInput].
func (c *Client) CancelInstance(ctx context.Context, instanceID, reason string) error {
	op := clientOp("cancel", instanceID)
	if err := checkInstanceID(op, instanceID); err != nil {
		return err
	}
	return c.enqueue(ctx, op, provider.CancelInstanceItem{Instance: instanceID, Reason: reason})
}

func (c *Client) enqueue(ctx context.Context, op string, item provider.WorkItem) error {
	if err := c.p.EnqueueForOrchestrator(ctx, item, 0); err != nil {
		return clientError(op, err)
	}
	return nil
}

// State is the state of an orchestration instance as a [Status] reports it.
type State int

// Instance states. The zero value is StateNotFound.
const (
	// StateNotFound: the instance has no history (it does not exist, or its
	// start has not been processed yet).
	StateNotFound State = iota
	// StateRunning: the instance's latest execution has started and not
	// finished, or has continued as new and the next execution has not
	// started yet.
	StateRunning
	// StateCompleted: the latest execution completed; Status.Output holds
	// its result.
	StateCompleted
	// StateFailed: the latest execution failed (cancellation included);
	// Status.Failure says why.
	StateFailed
	// StatePending: the instance was started and no runtime has taken its
	// first turn yet (provider.StatusPending): its start is queued. It
	// stays pending while no runtime serves its orchestration, until the
	// start is poisoned (Options.MaxAttempts), which fails it.
	StatePending
)

// String returns the state's name, such as "Running".
func (s State) String() string {
	switch s {
	case StateNotFound:
		return "NotFound"
	case StateRunning:
		return "Running"
	case StateCompleted:
		return "Completed"
	case StateFailed:
		return "Failed"
	case StatePending:
		return "Pending"
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

// IsTerminal reports whether the state is final: completed or failed.
func (s State) IsTerminal() bool { return s == StateCompleted || s == StateFailed }

// Status is a snapshot of an orchestration instance, derived from its
// latest execution's history.
type Status struct {
	// Instance is the instance id.
	Instance string
	// State is the instance's state.
	State State
	// Output is the result payload when State is [StateCompleted]; decode
	// it with [Output].
	Output string
	// Failure says why the instance failed when State is [StateFailed];
	// nil otherwise.
	Failure provider.ErrorDetails
	// CustomStatus is the custom status the orchestration last set; nil
	// when it never set one or cleared it.
	CustomStatus *string
	// CustomStatusVersion counts the turns that set or cleared the custom
	// status; 0 when none did.
	CustomStatusVersion uint64
	// ExecutionID is the latest execution's id; 0 when State is
	// [StateNotFound].
	ExecutionID uint64
}

// Status returns the instance's current status. An unknown instance is not
// an error: its status has [StateNotFound].
//
// The state is the latest execution's: Completed or Failed once it ended
// so, Running once it started. An execution that continued as new reports
// Running until the next one starts. An instance without history whose
// start is queued is [StatePending] (with [provider.StatusReader] or
// [provider.Admin]; without them, [StateNotFound]).
//
// With [provider.StatusReader] (both providers of this module) the status
// comes from the instance's record, in one read whatever the history's
// length (on DynamoDB one GetItem; docs/design.md §7). Otherwise it is
// derived from the history, the last OrchestrationCompleted or
// OrchestrationFailed in it deciding.
func (c *Client) Status(ctx context.Context, id string) (*Status, error) {
	op := clientOp("status", id)
	if err := checkInstanceID(op, id); err != nil {
		return nil, err
	}
	var s *Status
	var err error
	if c.reader != nil {
		s, err = c.readStatus(ctx, id)
	} else if s, err = c.readState(ctx, id); err == nil {
		err = c.addCustomStatus(ctx, s)
	}
	if err != nil {
		return nil, clientError(op, err)
	}
	return s, nil
}

// readStatus reads the instance's status, custom status included, with
// [provider.StatusReader]: one request on a store whose reader costs one,
// whatever the history's length. A status the reader does not know is
// derived from the history.
func (c *Client) readStatus(ctx context.Context, id string) (*Status, error) {
	st, err := c.reader.InstanceStatus(ctx, id)
	if errors.Is(err, provider.ErrNotFound) {
		return &Status{Instance: id}, nil
	}
	if err != nil {
		return nil, err
	}
	s := &Status{Instance: id, ExecutionID: st.ExecutionID, CustomStatus: st.CustomStatus, CustomStatusVersion: st.CustomStatusVersion}
	switch st.Status {
	case provider.StatusPending:
		s.State = StatePending
	case provider.StatusRunning, provider.StatusContinuedAsNew:
		s.State = StateRunning
	case provider.StatusCompleted:
		s.State = StateCompleted
		if st.Output != nil {
			s.Output = *st.Output
		}
	case provider.StatusFailed:
		s.State, s.Failure = StateFailed, st.Failure
	default:
		if s, err = c.readState(ctx, id); err == nil {
			err = c.addCustomStatus(ctx, s)
		}
		return s, err
	}
	return s, nil
}

// readState derives the instance's status from its latest execution's
// history, without the custom status.
func (c *Client) readState(ctx context.Context, id string) (*Status, error) {
	history, err := c.p.Read(ctx, id)
	if err != nil {
		return nil, err
	}
	s := statusFromHistory(id, history)
	if s.State == StateNotFound && c.admin != nil {
		info, err := c.admin.InstanceInfo(ctx, id)
		switch {
		case err == nil && info.Status == provider.StatusPending:
			s.State = StatePending
		case err != nil && !errors.Is(err, provider.ErrNotFound):
			return nil, err
		}
	}
	return s, nil
}

// addCustomStatus reads the instance's custom status into s.
func (c *Client) addCustomStatus(ctx context.Context, s *Status) error {
	cs, err := c.p.CustomStatus(ctx, s.Instance, 0)
	if err != nil {
		return err
	}
	setCustomStatus(s, cs)
	return nil
}

// setCustomStatus copies cs (nil when there is none) into s.
func setCustomStatus(s *Status, cs *provider.CustomStatus) {
	if cs != nil {
		s.CustomStatus = cs.Status
		s.CustomStatusVersion = cs.Version
	}
}

// statusFromHistory derives an instance's state from its latest
// execution's history.
func statusFromHistory(id string, history []provider.Event) *Status {
	s := &Status{Instance: id}
	if len(history) == 0 {
		return s
	}
	s.ExecutionID = history[len(history)-1].ExecutionID
	for _, e := range slices.Backward(history) {
		switch k := e.Kind.(type) {
		case provider.OrchestrationCompleted:
			s.State, s.Output = StateCompleted, k.Output
			return s
		case provider.OrchestrationFailed:
			s.State, s.Failure = StateFailed, k.Details
			return s
		}
	}
	if slices.ContainsFunc(history, func(e provider.Event) bool {
		_, ok := e.Kind.(provider.OrchestrationStarted)
		return ok
	}) {
		s.State = StateRunning
	} else {
		s.ExecutionID = 0
	}
	return s
}

// WaitForCompletion waits until the instance completes or fails and returns
// its final status. It polls, first at once, then after
// [ClientOptions.PollInitial], doubling the wait up to
// [ClientOptions.PollMax]. An instance that does not exist yet is waited
// for. When ctx ends first the error wraps ctx.Err().
//
// With [provider.StatusReader] each poll reads the status as
// [Client.Status] does. Otherwise, with [provider.Admin] each poll asks
// [provider.Admin.InstanceInfo] (one cheap request) and the history is read
// only once it reports a finished execution; without either, each poll
// reads the history.
func (c *Client) WaitForCompletion(ctx context.Context, id string) (*Status, error) {
	op := clientOp("wait for completion", id)
	if err := checkInstanceID(op, id); err != nil {
		return nil, err
	}
	var final *Status
	err := c.poll(ctx, func() (bool, error) {
		if c.reader != nil {
			s, err := c.readStatus(ctx, id)
			if err != nil || !s.State.IsTerminal() {
				return false, err
			}
			final = s
			return true, nil
		}
		if ok, err := c.mayBeTerminal(ctx, id); err != nil || !ok {
			return false, err
		}
		s, err := c.readState(ctx, id)
		if err != nil || !s.State.IsTerminal() {
			return false, err
		}
		if err := c.addCustomStatus(ctx, s); err != nil {
			return false, err
		}
		final = s
		return true, nil
	})
	if err != nil {
		return nil, clientError(op, err)
	}
	return final, nil
}

// WaitForStatusChange waits until the instance's custom status version
// exceeds lastSeenVersion, or the instance completes or fails, and returns
// its status then. Pass 0 to get the first custom status; pass the returned
// [Status.CustomStatusVersion] to wait for the next change. Polling and ctx
// are as for [Client.WaitForCompletion].
func (c *Client) WaitForStatusChange(ctx context.Context, id string, lastSeenVersion uint64) (*Status, error) {
	op := clientOp("wait for status change", id)
	if err := checkInstanceID(op, id); err != nil {
		return nil, err
	}
	var result *Status
	err := c.poll(ctx, func() (bool, error) {
		cs, err := c.p.CustomStatus(ctx, id, lastSeenVersion)
		if err != nil {
			return false, err
		}
		if cs == nil {
			// Unchanged: worth returning only if the instance finished.
			if ok, err := c.mayBeTerminal(ctx, id); err != nil || !ok {
				return false, err
			}
		}
		s, err := c.readState(ctx, id)
		if err != nil {
			return false, err
		}
		if cs == nil {
			if !s.State.IsTerminal() {
				return false, nil
			}
			if err := c.addCustomStatus(ctx, s); err != nil {
				return false, err
			}
		}
		setCustomStatus(s, cs)
		result = s
		return true, nil
	})
	if err != nil {
		return nil, clientError(op, err)
	}
	return result, nil
}

// mayBeTerminal reports whether the instance may have finished, so that
// reading its history is worth it. Without [provider.Admin], and whenever
// InstanceInfo cannot tell (no instance record, or a status it does not
// report), the answer is yes.
func (c *Client) mayBeTerminal(ctx context.Context, id string) (bool, error) {
	if c.admin == nil {
		return true, nil
	}
	info, err := c.admin.InstanceInfo(ctx, id)
	if errors.Is(err, provider.ErrNotFound) {
		// Not created yet, or history stored without an instance record.
		return true, nil
	}
	if err != nil {
		return false, err
	}
	switch info.Status {
	case provider.StatusRunning, provider.StatusContinuedAsNew, provider.StatusPending:
		return false, nil
	}
	return true, nil
}

// poll calls check at once and then with backoff until it reports done or
// fails, or ctx ends (an error wrapping ctx.Err(), and check's error if the
// last call failed because of it).
func (c *Client) poll(ctx context.Context, check func() (bool, error)) error {
	delay := c.opts.PollInitial
	var timer *time.Timer
	for {
		done, err := check()
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return fmt.Errorf("%w: %w", ctxErr, err)
			}
			return err
		}
		if done {
			return nil
		}
		if timer == nil {
			timer = time.NewTimer(delay)
			defer timer.Stop()
		} else {
			timer.Reset(delay)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
		}
		delay = min(delay*2, c.opts.PollMax)
	}
}

// KVValue returns the value of key in the instance's KV store, the running
// execution's writes included. ok is false when the key or the instance
// does not exist.
func (c *Client) KVValue(ctx context.Context, id, key string) (value string, ok bool, err error) {
	op := clientOp("kv value", id)
	if err := checkInstanceID(op, id); err != nil {
		return "", false, err
	}
	value, ok, err = c.p.KVValue(ctx, id, key)
	if err != nil {
		return "", false, clientError(op, err)
	}
	return value, ok, nil
}

// KVValues returns every key of the instance's KV store with its value, the
// running execution's writes included; empty for an unknown instance.
func (c *Client) KVValues(ctx context.Context, id string) (map[string]string, error) {
	op := clientOp("kv values", id)
	if err := checkInstanceID(op, id); err != nil {
		return nil, err
	}
	values, err := c.p.KVValues(ctx, id)
	if err != nil {
		return nil, clientError(op, err)
	}
	return values, nil
}

// WaitForKVValue waits until key exists in the instance's KV store and
// returns its value. It keeps waiting even if the instance finishes without
// setting the key; polling and ctx are as for [Client.WaitForCompletion].
func (c *Client) WaitForKVValue(ctx context.Context, id, key string) (string, error) {
	op := clientOp("wait for kv value", id)
	if err := checkInstanceID(op, id); err != nil {
		return "", err
	}
	var value string
	err := c.poll(ctx, func() (bool, error) {
		v, ok, err := c.p.KVValue(ctx, id, key)
		value = v
		return ok, err
	})
	if err != nil {
		return "", clientError(op+" key "+key, err)
	}
	return value, nil
}

// Stats describes the instance's current execution: history size, pending
// carried-forward queue messages and KV usage. It returns nil and no error
// for an unknown instance.
func (c *Client) Stats(ctx context.Context, id string) (*provider.SystemStats, error) {
	op := clientOp("stats", id)
	if err := checkInstanceID(op, id); err != nil {
		return nil, err
	}
	stats, err := c.p.InstanceStats(ctx, id)
	if err != nil {
		return nil, clientError(op, err)
	}
	return stats, nil
}

// management returns the provider's management capability, or an error
// wrapping [ErrManagementNotAvailable] that names op.
func (c *Client) management(op string) (provider.Admin, error) {
	if c.admin == nil {
		return nil, fmt.Errorf("%w: %s", ErrManagementNotAvailable, op)
	}
	return c.admin, nil
}

// ListInstances returns every instance id, newest first where the provider
// can tell. It needs [provider.Admin].
func (c *Client) ListInstances(ctx context.Context) ([]string, error) {
	const op = "list instances"
	a, err := c.management(op)
	if err != nil {
		return nil, err
	}
	ids, err := a.ListInstances(ctx)
	if err != nil {
		return nil, clientError(op, err)
	}
	return ids, nil
}

// ListInstancesByStatus returns the instances whose current execution has
// status: [provider.StatusRunning], [provider.StatusCompleted],
// [provider.StatusFailed] or [provider.StatusContinuedAsNew]. It needs
// [provider.Admin].
func (c *Client) ListInstancesByStatus(ctx context.Context, status string) ([]string, error) {
	op := "list instances with status " + status
	a, err := c.management(op)
	if err != nil {
		return nil, err
	}
	ids, err := a.ListInstancesByStatus(ctx, status)
	if err != nil {
		return nil, clientError(op, err)
	}
	return ids, nil
}

// InstanceInfo describes the instance and its current execution as the
// provider records them. An unknown instance fails with an error wrapping
// [provider.ErrNotFound]. It needs [provider.Admin].
func (c *Client) InstanceInfo(ctx context.Context, id string) (*provider.InstanceInfo, error) {
	op := clientOp("instance info", id)
	a, err := c.management(op)
	if err != nil {
		return nil, err
	}
	info, err := a.InstanceInfo(ctx, id)
	if err != nil {
		return nil, clientError(op, err)
	}
	return info, nil
}

// ExecutionInfo describes one execution of the instance. An unknown
// execution fails with an error wrapping [provider.ErrNotFound]. It needs
// [provider.Admin].
func (c *Client) ExecutionInfo(ctx context.Context, id string, executionID uint64) (*provider.ExecutionInfo, error) {
	op := fmt.Sprintf("execution info %s/%d", id, executionID)
	a, err := c.management(op)
	if err != nil {
		return nil, err
	}
	info, err := a.ExecutionInfo(ctx, id, executionID)
	if err != nil {
		return nil, clientError(op, err)
	}
	return info, nil
}

// ListExecutions returns the instance's execution ids in ascending order;
// empty for an unknown instance. It needs [provider.Admin].
func (c *Client) ListExecutions(ctx context.Context, id string) ([]uint64, error) {
	op := clientOp("list executions", id)
	a, err := c.management(op)
	if err != nil {
		return nil, err
	}
	ids, err := a.ListExecutions(ctx, id)
	if err != nil {
		return nil, clientError(op, err)
	}
	return ids, nil
}

// History returns the events of one execution of the instance in event-id
// order; executionID 0 means the latest execution. An unknown instance or
// execution has an empty history. It needs [provider.Admin].
func (c *Client) History(ctx context.Context, id string, executionID uint64) ([]provider.Event, error) {
	op := fmt.Sprintf("history %s/%d", id, executionID)
	a, err := c.management(op)
	if err != nil {
		return nil, err
	}
	var events []provider.Event
	if executionID == 0 {
		events, err = a.ReadHistory(ctx, id)
	} else {
		events, err = a.ReadHistoryWithExecutionID(ctx, id, executionID)
	}
	if err != nil {
		return nil, clientError(op, err)
	}
	return events, nil
}

// SystemMetrics counts the instances, executions and events the provider
// holds. It needs [provider.Admin].
func (c *Client) SystemMetrics(ctx context.Context) (provider.SystemMetrics, error) {
	const op = "system metrics"
	a, err := c.management(op)
	if err != nil {
		return provider.SystemMetrics{}, err
	}
	m, err := a.SystemMetrics(ctx)
	if err != nil {
		return provider.SystemMetrics{}, clientError(op, err)
	}
	return m, nil
}

// QueueDepths counts the unlocked messages of each queue. It needs
// [provider.Admin].
func (c *Client) QueueDepths(ctx context.Context) (provider.QueueDepths, error) {
	const op = "queue depths"
	a, err := c.management(op)
	if err != nil {
		return provider.QueueDepths{}, err
	}
	d, err := a.QueueDepths(ctx)
	if err != nil {
		return provider.QueueDepths{}, clientError(op, err)
	}
	return d, nil
}

// InstanceTree returns root and all its descendant sub-orchestrations. It
// needs [provider.Admin].
func (c *Client) InstanceTree(ctx context.Context, root string) (provider.InstanceTree, error) {
	op := clientOp("instance tree", root)
	a, err := c.management(op)
	if err != nil {
		return provider.InstanceTree{}, err
	}
	tree, err := provider.GetInstanceTree(ctx, a, root)
	if err != nil {
		return provider.InstanceTree{}, clientError(op, err)
	}
	return tree, nil
}

// DeleteInstance deletes a root instance with all its sub-orchestrations
// and their data, atomically. It fails with an error wrapping
// [provider.ErrNotFound] for an unknown instance,
// [provider.ErrSubOrchestration] for a sub-orchestration (delete its root)
// and, unless force is set, [provider.ErrStillRunning] when an instance of
// the tree is running. Force deletes stored state only: a runtime working
// on the instance is not stopped, so cancel first where possible. It needs
// [provider.Admin].
func (c *Client) DeleteInstance(ctx context.Context, id string, force bool) (provider.DeleteInstanceResult, error) {
	op := clientOp("delete instance", id)
	a, err := c.management(op)
	if err != nil {
		return provider.DeleteInstanceResult{}, err
	}
	res, err := provider.DeleteInstance(ctx, a, id, force)
	if err != nil {
		return provider.DeleteInstanceResult{}, clientError(op, err)
	}
	return res, nil
}

// DeleteInstanceBulk deletes the finished root instances that filter
// selects, each with its whole tree; running instances are skipped. It
// needs [provider.Admin].
func (c *Client) DeleteInstanceBulk(ctx context.Context, filter provider.InstanceFilter) (provider.DeleteInstanceResult, error) {
	const op = "delete instances"
	a, err := c.management(op)
	if err != nil {
		return provider.DeleteInstanceResult{}, err
	}
	res, err := a.DeleteInstanceBulk(ctx, filter)
	if err != nil {
		return provider.DeleteInstanceResult{}, clientError(op, err)
	}
	return res, nil
}

// PruneExecutions deletes old executions of the instance as options
// select; the current execution and running ones are kept, and KV data is
// not touched. An unknown instance fails with an error wrapping
// [provider.ErrNotFound]. It needs [provider.Admin].
func (c *Client) PruneExecutions(ctx context.Context, id string, options provider.PruneOptions) (provider.PruneResult, error) {
	op := clientOp("prune executions", id)
	a, err := c.management(op)
	if err != nil {
		return provider.PruneResult{}, err
	}
	res, err := a.PruneExecutions(ctx, id, options)
	if err != nil {
		return provider.PruneResult{}, clientError(op, err)
	}
	return res, nil
}

// PruneExecutionsBulk prunes, as [Client.PruneExecutions] does, every
// instance that filter selects, and sums the results. It needs
// [provider.Admin].
func (c *Client) PruneExecutionsBulk(ctx context.Context, filter provider.InstanceFilter, options provider.PruneOptions) (provider.PruneResult, error) {
	const op = "prune executions of instances"
	a, err := c.management(op)
	if err != nil {
		return provider.PruneResult{}, err
	}
	res, err := a.PruneExecutionsBulk(ctx, filter, options)
	if err != nil {
		return provider.PruneResult{}, clientError(op, err)
	}
	return res, nil
}

// Output decodes the result of a completed instance into a T. A failed
// instance returns a [*FailureError]; an unknown one an error wrapping
// [provider.ErrNotFound]; a running one an error saying so.
func Output[T any](s *Status) (T, error) {
	var zero T
	if s == nil {
		return zero, errors.New("durable: output of a nil status")
	}
	op := "output of " + s.Instance
	switch s.State {
	case StateCompleted:
		v, err := decode[T](s.Output)
		if err != nil {
			return zero, clientError(op, err)
		}
		return v, nil
	case StateFailed:
		return zero, &FailureError{Instance: s.Instance, Details: s.Failure}
	case StateNotFound:
		return zero, clientError(op, provider.ErrNotFound)
	}
	return zero, fmt.Errorf("durable: %s: instance is %s, not finished", op, s.State)
}

// WaitForOutput waits for the instance to finish, as
// [Client.WaitForCompletion] does, and decodes its result as [Output]
// does: a failed instance returns a [*FailureError].
func WaitForOutput[T any](ctx context.Context, c *Client, id string) (T, error) {
	s, err := c.WaitForCompletion(ctx, id)
	if err != nil {
		var zero T
		return zero, err
	}
	return Output[T](s)
}

// clientOp names an operation on an instance for error messages.
func clientOp(verb, id string) string {
	if id == "" {
		return verb
	}
	return verb + " " + id
}

// clientError prefixes err with the package and the operation.
func clientError(op string, err error) error {
	return fmt.Errorf("durable: %s: %w", op, err)
}

// checkNonEmpty fails with an error wrapping [provider.ErrInvalidInput] when
// value is empty.
// checkInstanceID applies the provider's rule for instance ids
// (provider.ValidateInstanceID).
func checkInstanceID(op, id string) error {
	if err := provider.ValidateInstanceID(op, id); err != nil {
		return fmt.Errorf("durable: %s: %w", op, err)
	}
	return nil
}

func checkNonEmpty(op, what, value string) error {
	if value == "" {
		return fmt.Errorf("durable: %s: %w: empty %s", op, provider.ErrInvalidInput, what)
	}
	return nil
}

// encodePayload encodes a payload; an unencodable value is invalid input.
func encodePayload(op string, v any) (string, error) {
	s, err := encode(v)
	if err != nil {
		return "", fmt.Errorf("durable: %s: %w: %w", op, provider.ErrInvalidInput, err)
	}
	return s, nil
}
