package main

import (
	"flag"
	"fmt"
	"time"
)

// exitClockSkew is the exit code of clock when this host's clock is known
// to be further from DynamoDB's than --max-skew.
const exitClockSkew = 6

// clockSamples is how many List calls clock makes: each is a Query per
// lock shard, so 32 responses, enough to narrow the estimate to tens of
// milliseconds.
const clockSamples = 2

func cmdClock(a *app, fs *flag.FlagSet) func([]string) error {
	maxSkew := fs.Duration("max-skew", time.Second, "exit with code 6 when the clock is known to be further than this from DynamoDB's")
	return func(args []string) error {
		if err := wantArgs("clock", args, 0, 0, "no arguments"); err != nil {
			return err
		}
		if *maxSkew <= 0 {
			return usageError("clock: --max-skew %v is not positive", *maxSkew)
		}
		locker, closeLocks, err := a.openLocks(false)
		if err != nil {
			return err
		}
		defer closeLocks()
		for range clockSamples {
			if _, err := locker.List(a.ctx); err != nil {
				return a.lockError(err)
			}
		}
		skew, within, ok := locker.ClockSkew()
		if !ok {
			return fmt.Errorf("clock: no response carried a Date header, so the skew cannot be measured through this endpoint")
		}
		beyond := skewBeyond(skew, within, *maxSkew)
		if a.jsonOut() {
			if err := a.printJSON(map[string]any{
				"skew_seconds": skew.Seconds(), "uncertainty_seconds": within.Seconds(),
				"max_skew_seconds": maxSkew.Seconds(), "beyond_max_skew": beyond,
			}); err != nil {
				return err
			}
		} else {
			fmt.Fprintf(a.stdout, "this host's clock is %+v from DynamoDB's (± %v)\n", skew.Round(time.Millisecond), within.Round(time.Millisecond))
		}
		if beyond {
			return &codedError{exitClockSkew, fmt.Sprintf("clock: the skew is beyond --max-skew %v: leases and timers of processes on this host are off by it (docs/design.md §9)", *maxSkew)}
		}
		return nil
	}
}

// skewBeyond reports whether a skew measured as skew ± within is known to
// be further than max from zero: the whole interval lies beyond it.
func skewBeyond(skew, within, max time.Duration) bool {
	return skew-within > max || skew+within < -max
}
