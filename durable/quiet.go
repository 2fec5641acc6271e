package durable

import "time"

// Quiet reports how long no slot of the runtime has fetched or finished an
// item (0 while one is in flight: busy), and a channel closed at the next
// change: what [Runtime.RunUntilIdle] waits on, for a host that decides
// itself when a run ends (package lambdahost also waits for the signals
// its provider holds). Idleness is counted from [NewRuntime] until the
// first item.
func (r *Runtime) Quiet() (quiet time.Duration, busy bool, changed <-chan struct{}) {
	return r.work.quiet()
}
