// Package queues carries wake-up signals for duradyn's dispatchers over
// SQS standard queues.
//
// DynamoDB holds all queue state. SQS only wakes the dispatchers that wait
// for work: after the provider commits a write that makes work visible, it
// calls [Signals.Notify]; a fetcher that found nothing in DynamoDB calls
// [Signals.Wait] with what is left of its poll timeout, and looks in DynamoDB
// again as soon as a signal for its queue kind arrives.
//
// # Signals are hints
//
// A signal never carries work and is never the only record of it, so SQS
// may lose, duplicate, reorder or deliver a signal early without losing or
// duplicating work:
//
//   - lost (a failed send, a message deleted by a process that stopped
//     waiting, a signal beyond 15 minutes whose sender stopped before it was
//     sent, one declined too often): the work stays in DynamoDB and is
//     found when a fetcher's poll timeout runs out, or by the periodic sweep;
//   - duplicated or early: a fetcher looks once more in DynamoDB and finds
//     nothing to take, or work that is not visible yet, and waits again;
//   - reordered: fetchers read the order of work from DynamoDB, not from
//     signals.
//
// The worst a signal problem can cost is latency, bounded by the poll
// timeout. Locking, visibility and exactly-once processing stay in DynamoDB.
//
// # Message shape
//
// One SQS message per distinct signal. The body is ASCII-only JSON, so SQS's
// character rules hold whatever the instance id contains ('#', any Unicode,
// NUL):
//
//	{"v":1,"kind":"orchestrator","shard":3,"instance_b64":"b3JkZXItMQ==","visible_at_ms":1767225600000,"from":"5KQ3ZJ7XG2NWLB4E"}
//
// v is the format version (added fields keep it; receivers drop messages of
// another version), kind is "orchestrator", "worker", "lock" or "schedule"
// (a kind that does not travel on the receiving queue is taken as the
// queue's own), shard the queue shard,
// instance_b64 the standard base64 of the instance id's bytes (omitted when
// there is none), visible_at_ms the Unix time in milliseconds at which the
// work becomes visible, rounded up (omitted for "now"), and from a random id
// of the sending [Signals]. A declined signal sent on carries hops (how often
// it was declined) and declined_by (the id of the last process that declined
// it) instead of from. A process deletes its own messages without waking
// anyone, because Notify already woke its waiters in-process. No message
// attributes are used.
//
// # Sending without waiting
//
// [Signals.Notify] returns once SQS has the messages: for callers whose
// process may end right after (a client that started an orchestration).
// [Signals.Post] wakes this process's waiters the same way and leaves the
// messages to a background sender, which batches what has been posted
// meanwhile (each distinct signal once, ten to a request); [Signals.Flush]
// waits for it, and [Signals.Close] sends what is left, for at most
// [CloseFlushTimeout]. A post that finds [Options.MaxPosted] messages
// waiting drops its own, as a lost signal. Post sends no message for a
// signal of one unit of work that a free waiter of this process takes
// ([Signal.Unsent]).
//
// # Visibility and delays
//
// A signal whose VisibleAt is in the future (a timer) is sent with
// DelaySeconds rounded up to whole seconds, so it never arrives before its
// work, and is delivered to this process's waiters by an in-process timer at
// VisibleAt. SQS delays end at 15 minutes ([MaxDelay]); a later signal is
// kept in the sending process until it is within 15 minutes, then sent (if
// that process stops first, the sweep finds its work). Received messages are deleted
// once delivered or sent on (one DeleteMessageBatch per receive); a message
// whose delete failed, or that arrived as [Signals.Close] began, or that
// could not be sent on, is not deleted and comes back after the receive's
// 2 s visibility timeout, for this process or another.
// Undecodable messages are logged and deleted, never redriven: a dead-letter
// queue is not needed for signal queues.
//
// # Receiving
//
// Each kind has at most one poller goroutine per [Signals], running only while
// some [Signals.Wait] call for that kind is blocked, so a process with many
// dispatcher goroutines holds one long poll per kind, not one per goroutine.
// What the poller receives is broadcast to every waiter through a channel of
// capacity one with non-blocking sends, so bursts coalesce into one wake-up.
// Signals that arrive while nobody waits are kept (up to
// [Options.MaxPending]) for the next Wait, so a signal sent between a
// fetcher's DynamoDB lookup and its Wait is not lost.
//
// A long poll is never cancelled while the process runs: SQS keeps a
// cancelled receive open on its side and may still hand it a message, whose
// response is then lost and which comes back only after the receive's
// visibility timeout (2 s). So when the last waiter of a kind leaves
// (woken, timed out, cancelled), the receive in flight runs on; the
// signals it returns within half a second are kept for the next Wait, as a
// dispatcher that found nothing, or swept, waits again within milliseconds;
// later ones are sent back to their queue unchanged ([Stats.SignalsReturned]:
// one SendMessageBatch per receive, besides its delete), and so are
// received signals kept for a Wait (by the poller, handed back with
// [Signals.Requeue], or left by a Wait whose context ended as they reached
// it) that none has taken half a second later (the
// process's dispatchers stopped, as a runtime's do at shutdown while its
// provider stays open, or are all busy), so that a process does not hold
// signals that idle processes could act on. Only [Signals.Close] cancels a receive; a message SQS hands
// it afterwards, or one whose delete failed, is back on the queue within 2 s.
//
// SQS's WaitTimeSeconds takes whole seconds. A Wait of t long-polls for
// floor(t) seconds (a short poll when that is 0) and spends the remainder
// in-process, so sub-second timeouts are honoured: a 300 ms Wait returns
// after about 300 ms even when the short poll it issued takes longer.
// Because the SDK omits a WaitTimeSeconds of 0, a "short" poll takes the
// queue's ReceiveMessageWaitTimeSeconds: keep that attribute at its default
// of 0 on signal queues. (Waiters still return on time; only the poller's
// request lasts longer.)
//
// A kind without a queue URL is in-process only: Notify and Wait make no
// SQS requests for it, and an idle process makes no requests at all. With a
// URL, an idle process (nobody waiting) makes none once its last receive
// has run out; a waiting process makes one ReceiveMessage per queue per
// 20 s it waits, even across successive waits (one short poll for a wait
// under a second), plus one
// ReceiveMessage and one DeleteMessageBatch per batch of up to ten
// signals received. [Signals.Stats] counts requests per operation.
//
// # Kinds and queues
//
// [Orchestrator] and [Worker] signals wake the provider's dispatchers, each on
// its own queue. [Lock] signals (a distributed lock was released) and
// [Schedule] signals (a job became due earlier) wake the waiters of packages
// locks and jobs; they travel on the orchestrator queue, so those packages
// need no queue of their own. One poller per queue serves every kind that
// travels on it and hands each signal to the waiters of the kind its body
// names.
//
// # Signals a process cannot use
//
// A standard queue gives each message to one receiver, which may not be the
// process that can act on it: a worker whose tag filter excludes the
// activity, a session another process owns, a lock nobody here waits for.
// [Signals.Decline] sends such a signal on to another process, marked as
// declined by this one (which sends it on again, without waking anyone, if
// it comes back), at most [MaxHops] times in all; then the work waits for a
// sweep, as a lost signal's does. The poller declines by itself the signals
// of a kind that no [Signals.Wait] in this process has ever waited for, and
// the [Lock] signals that no lock waiter of this process is there to take,
// or that this process sent itself (its own waiters had them in-process;
// the SQS copy is meant for other processes).
//
// [Signals.Close] stops the pollers and timers and waits for them; no
// goroutine of this package outlives it.
package queues
