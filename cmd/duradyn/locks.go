package main

import (
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/duradyn/duradyn/locks"
	"github.com/duradyn/duradyn/queues"
)

func cmdLocks(a *app, fs *flag.FlagSet) func([]string) error {
	subs := []subcommand{
		{name: "list", usage: "locks list", run: func(args []string, _ map[string]bool) error {
			if err := wantSubArgs("locks list", "locks list", args, 0, 0, "no arguments"); err != nil {
				return err
			}
			return a.locksList()
		}},
		{name: "reset", usage: "locks reset <key>", run: func(args []string, _ map[string]bool) error {
			if err := wantSubArgs("locks reset", "locks reset <key>", args, 1, 1, "<key>"); err != nil {
				return err
			}
			return a.locksReset(args[0])
		}},
	}
	return func(args []string) error {
		return runGroup("locks", fs, nil, subs, args)
	}
}

// openLocks opens the table and returns a locker on it with the table's
// shard count. With signal and an orchestrator queue, the locker sends its
// release notices to the lockers of other processes. close releases what
// openLocks made.
func (a *app) openLocks(signal bool) (locker *locks.Dynamo, close func(), err error) {
	if err := a.open(false); err != nil {
		return nil, nil, err
	}
	var signals *queues.Signals
	if signal {
		if signals, err = a.orchestratorSignals(); err != nil {
			return nil, nil, err
		}
	}
	locker, err = locks.NewDynamo(aws.Config{}, func(o *locks.DynamoOptions) {
		o.TableName = a.g.table
		o.Client = a.db
		o.Signals = signals
		o.Logger = a.logger()
	})
	if err != nil {
		closeSignals(signals)
		return nil, nil, usageError("%v", err)
	}
	return locker, func() {
		locker.Close()
		closeSignals(signals)
	}, nil
}

// lockError words an error of a locker.
func (a *app) lockError(err error) error {
	if errors.Is(err, locks.ErrInvalidInput) {
		return usageError("%v", err)
	}
	return a.awsError(err)
}

// lockJSON is a held lock in JSON output.
type lockJSON struct {
	Key      string    `json:"key"`
	Owner    string    `json:"owner"`
	LeaseEnd time.Time `json:"lease_end"`
}

func (a *app) locksList() error {
	locker, closeLocks, err := a.openLocks(false)
	if err != nil {
		return err
	}
	defer closeLocks()
	holders, err := locker.List(a.ctx)
	if err != nil {
		return a.lockError(err)
	}
	if a.jsonOut() {
		rows := make([]lockJSON, 0, len(holders))
		for _, h := range holders {
			rows = append(rows, lockJSON{h.Key, h.Owner, h.Until.UTC()})
		}
		return a.printJSON(map[string]any{"locks": rows})
	}
	tw := a.table()
	fmt.Fprintln(tw, "KEY\tOWNER\tLEASE END")
	for _, h := range holders {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", h.Key, h.Owner, h.Until.UTC().Format(timeLayout))
	}
	return tw.Flush()
}

func (a *app) locksReset(key string) error {
	locker, closeLocks, err := a.openLocks(true)
	if err != nil {
		return err
	}
	defer closeLocks()
	removed, err := locker.Reset(a.ctx, key)
	if err != nil {
		return a.lockError(err)
	}
	if removed && a.g.orchQueue == "" {
		fmt.Fprintln(a.stderr, "duradyn: warning: no --orchestrator-queue-url: waiters for this lock in other processes try again when the lease they saw ends")
	}
	if a.jsonOut() {
		return a.printJSON(map[string]any{"key": key, "removed": removed})
	}
	if removed {
		fmt.Fprintf(a.stdout, "lock %s reset: its live holder was removed\n", key)
		return nil
	}
	fmt.Fprintf(a.stdout, "lock %s had no live holder; nothing removed\n", key)
	return nil
}
