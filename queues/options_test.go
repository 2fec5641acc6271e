package queues

import (
	"testing"
	"time"
)

func TestOptions_Defaults(t *testing.T) {
	t.Parallel()
	o, err := Options{}.resolve()
	if err != nil {
		t.Fatal(err)
	}
	if o.MaxLongPoll != 20*time.Second || o.ErrorBackoff != time.Second || o.MaxPending != 100 ||
		o.Logger == nil || o.Now == nil || o.OrchestratorQueueURL != "" || o.WorkerQueueURL != "" {
		t.Errorf("defaults = %+v", o)
	}
	o, err = Options{MaxLongPoll: 5500 * time.Millisecond}.resolve()
	if err != nil || o.MaxLongPoll != 5*time.Second {
		t.Errorf("MaxLongPoll 5.5s resolves to %v, %v; want 5s", o.MaxLongPoll, err)
	}
}
