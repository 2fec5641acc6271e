package durable

import (
	"fmt"
	"log/slog"
	"math/rand/v2"

	"github.com/duradyn/duradyn/durable/internal/replay"
	"github.com/duradyn/duradyn/provider"
)

// verifySampled reports whether this turn is one of the share
// Options.VerifyReplay checks.
func (r *Runtime) verifySampled() bool {
	rate := r.opts.VerifyReplay
	return rate >= 1 || (rate > 0 && rand.Float64() < rate)
}

// verifyTurn computes the turn of in a second time, from history and
// without kept code, as another runtime or a restart would, and compares
// it with turn, the turn as run. When they differ the code is
// nondeterministic: verifyTurn returns the turn that fails the execution
// for it, naming the orchestration, its version and the first call that
// differs with its source lines. It returns nil when they agree, and for
// turns that ran no code.
func (r *Runtime) verifyTurn(log *slog.Logger, in replay.Input, turn *replay.Turn) *replay.Turn {
	if in.Abort != nil || turn.Outcome == replay.Drained {
		return nil
	}
	check := in
	check.Keep, check.Callers = false, true
	check.Env = &turnEnv{logger: slog.New(slog.DiscardHandler)} // its logs would repeat the run's
	replayed, err := replay.Run(check)
	if err != nil {
		log.Warn("replay check of the turn did not run", "error", err)
		return nil
	}
	d := replay.Diverge(priorHistory(in.Item, turn), turn, replayed)
	if d == nil {
		return nil
	}
	msg := fmt.Sprintf("orchestration %s version %s: replayed from history, the turn differs from the turn as run: %s", turn.Name, turn.Version, d)
	log.Error("nondeterministic orchestration: failing the execution", "orchestration_name", turn.Name, "orchestration_version", turn.Version, "divergence", d.String())
	failing := in
	failing.Keep = false
	failing.Abort = provider.ConfigurationDetails{Kind: provider.ConfigNondeterminism, Resource: turn.Name, Message: &msg}
	failed, err := replay.Run(failing)
	if err != nil {
		log.Error("recording the nondeterminism failed; committing the turn as run", "error", err)
		return nil
	}
	return failed
}

// priorHistory is the recorded history of the execution turn runs: none
// for a turn that starts an execution.
func priorHistory(item *provider.OrchestrationItem, turn *replay.Turn) []provider.Event {
	if delta := turn.Commit.HistoryDelta; len(delta) > 0 {
		if _, starts := delta[0].Kind.(provider.OrchestrationStarted); starts {
			return nil
		}
	}
	return item.History
}
