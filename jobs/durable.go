package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/duradyn/duradyn/durable"
)

// instanceTimeLayout writes a scheduled time in [InstanceID]: RFC 3339 in
// UTC with milliseconds, always 24 characters.
const instanceTimeLayout = "2006-01-02T15:04:05.000Z"

// InstanceID returns the id of the orchestration instance that an action
// made by [StartOrchestration] starts for the scheduled time scheduled of
// the job with id jobID: "job:<job id>:<scheduled time>", the time in RFC
// 3339, UTC, with milliseconds, for example
// "job:nightly-report:2025-01-02T03:00:00.000Z". The time has a fixed width
// and comes last, so two different jobs or times never share an id.
func InstanceID(jobID string, scheduled time.Time) string {
	return "job:" + jobID + ":" + scheduled.UTC().Format(instanceTimeLayout)
}

// FireInput is the input an action made by [StartOrchestration] without an
// input function gives the orchestration.
type FireInput struct {
	// JobID is the id of the job that fired.
	JobID string `json:"job_id"`
	// ScheduledTime is the scheduled time that fired, UTC.
	ScheduledTime time.Time `json:"scheduled_time"`
}

// StartOrchestration returns an action that starts, for each fire, an
// instance of the orchestration name through client, with instance id
// [InstanceID] of the job and scheduled time, and input input(fire) (a
// [FireInput] when input is nil), encoded as [durable.Client.StartOrchestration]
// does; opts are its options ([durable.Version]).
//
// Each scheduled time starts one instance, once: a run repeated after a
// scheduler stopped or crashed ([Fire.Repeat]) first asks for the
// instance's status and starts nothing when the instance exists, and a
// start that reaches an instance that exists already (both schedulers
// started it before either saw it) is dropped by the runtime, because the
// client's start of an existing id enqueues a start message that an
// instance with history ignores: StartOrchestration returns no error for
// it. The action returns once the start is enqueued, not when the
// orchestration ends.
//
// Cost: the provider's enqueue of one orchestrator message; a repeated run
// reads the instance's status first.
func StartOrchestration(client *durable.Client, name string, input func(Fire) any, opts ...durable.Option) Action {
	return func(ctx context.Context, fire Fire) error {
		id := InstanceID(fire.Job.ID, fire.ScheduledTime)
		if fire.Repeat {
			st, err := client.Status(ctx, id)
			if err != nil {
				return fmt.Errorf("jobs: status of instance %q: %w", id, err)
			}
			if st.State != durable.StateNotFound {
				return nil
			}
		}
		var in any = FireInput{JobID: fire.Job.ID, ScheduledTime: fire.ScheduledTime}
		if input != nil {
			in = input(fire)
		}
		if err := client.StartOrchestration(ctx, id, name, in, opts...); err != nil {
			return fmt.Errorf("jobs: start instance %q of %s: %w", id, name, err)
		}
		return nil
	}
}
