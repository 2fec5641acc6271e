package scenario

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/duradyn/duradyn/bench/report"
)

// HelloCities5LoadName is the name of the HelloCities5Load scenario.
const HelloCities5LoadName = "HelloCities5Load"

// Extra keys of the HelloCities5Load scenario.
const (
	ExtraInstances = "instances"
	ExtraRuntimes  = "runtimes"
	ExtraSlots     = "slots per runtime"
)

// LoadVariants are the runtimes HelloCities5Load measures, one after the
// other: one runtime of default options; one with 8 orchestration and 8
// worker slots; two runtimes of default options on one table.
func LoadVariants() []Runtimes {
	return []Runtimes{{Count: 1}, {Count: 1, Slots: 8}, {Count: 2}}
}

// Label is rt in a system's name: "1 runtime, 2+2 slots".
func (rt Runtimes) Label() string {
	count, slots := max(rt.Count, 1), rt.slots()
	noun := "runtimes"
	if count == 1 {
		noun = "runtime"
	}
	return fmt.Sprintf("%d %s, %d+%d slots", count, noun, slots, slots)
}

// slots is each runtime's orchestration (and worker) slots: Slots, or the
// runtime's default of 2.
func (rt Runtimes) slots() int {
	if rt.Slots > 0 {
		return rt.Slots
	}
	return 2
}

// HelloCities5Load is HelloCities5 with more instances than one process
// keeps signals for (instances, 300 in the full run), on DynamoDBSQS only,
// with each of LoadVariants: more slots than the default, and a second
// process on the same table. It shows what the wake-up and sweep design
// costs when work waits, which HelloCities5's 100 instances on one
// runtime of default options do not. Each result's system names its
// variant: "duradyn/dynamodb-local+sqs (2 runtimes, 2+2 slots)". It runs
// nothing when env has no DynamoDBSQS system.
func HelloCities5Load(ctx context.Context, env *Env, instances int) ([]report.Result, error) {
	system, ok := env.system(DynamoDBSQS)
	if !ok {
		env.logf("%s: not run: it runs on %s only, which is not selected", HelloCities5LoadName, DynamoDBSQS)
		return nil, nil
	}
	timeout := 5*time.Minute + time.Duration(instances)*100*time.Millisecond
	var results []report.Result
	var errs []error
	for _, rt := range LoadVariants() {
		r, err := onSystem(ctx, env, system, HelloCities5LoadName, timeout, timesUnmetered, func(ctx context.Context, d *Deployment) (report.Result, error) {
			r, err := helloCities5On(ctx, d, instances, rt)
			setExtra(&r, ExtraInstances, float64(instances))
			setExtra(&r, ExtraRuntimes, float64(max(rt.Count, 1)))
			setExtra(&r, ExtraSlots, float64(rt.slots()))
			return r, err
		})
		r.System = fmt.Sprintf("%s (%s)", system.Name, rt.Label())
		results = append(results, r)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return results, errors.Join(errs...)
}
