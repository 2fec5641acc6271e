package localstack

import "context"

// Wait blocks until one of the embedded servers [Start] started exits, or
// ctx is done. It returns an error naming the server that exited, with the
// last lines of its log, or ctx's error. With nothing started by Start
// (endpoints from the environment, a LocalStack container) it waits for ctx
// alone. A long-running tool calls it to notice an emulator that crashed;
// it returns at once after [Emulator.Stop].
func (e *Emulator) Wait(ctx context.Context) error {
	if e == nil {
		<-ctx.Done()
		return ctx.Err()
	}
	exited := make(chan *process, len(e.procs))
	done := make(chan struct{})
	defer close(done)
	for _, p := range e.procs {
		go func() {
			select {
			case <-p.done:
				exited <- p
			case <-done:
			}
		}()
	}
	select {
	case p := <-exited:
		return p.exitError("while running")
	case <-ctx.Done():
		return ctx.Err()
	}
}
