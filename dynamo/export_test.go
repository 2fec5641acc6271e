package dynamo

import "github.com/dynoxide/dynoxide/queues"

// RequeueSignals hands sigs to p's waiters as a second delivery of a
// signal does (every waiter of a process receives each signal).
func RequeueSignals(p *Provider, sigs ...queues.Signal) { p.signals.Requeue(sigs...) }
