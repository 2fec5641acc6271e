package jobs

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// CronArgs are the arguments of a [TriggerCron] trigger, as JSON
// {"expr": "*/5 * * * *", "timezone": "Europe/Berlin"}.
type CronArgs struct {
	// Expr is a standard cron expression of five fields (minute, hour,
	// day of month, month, day of week; names such as MON and JAN allowed;
	// a day of month and a day of week both restricted match either), or
	// one of the descriptors @yearly (@annually), @monthly, @weekly,
	// @daily (@midnight) and @hourly. Required. "@every" is refused (use
	// [TriggerInterval]), and so is a TZ= or CRON_TZ= prefix (use
	// Timezone). An expression that matches no time at all (30 February)
	// is refused.
	Expr string `json:"expr"`
	// Timezone is the IANA time zone the expression is read in, such as
	// "Europe/Berlin". Default "" is UTC. The host needs the time zone
	// database (or the program imports time/tzdata). Across a daylight
	// saving change, wall-clock times that do not exist in the zone are
	// skipped, and those that occur twice fire twice (at both instants).
	Timezone string `json:"timezone,omitempty"`
}

// TriggerType returns [TriggerCron].
func (CronArgs) TriggerType() string { return TriggerCron }

// cronParser reads five fields and the descriptors.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// trigger checks a and returns its trigger.
func (a CronArgs) trigger() (Trigger, error) {
	expr := strings.TrimSpace(a.Expr)
	switch {
	case expr == "":
		return nil, invalid("cron expr", a.Expr, "empty")
	case strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ="):
		return nil, invalid("cron expr", a.Expr, "time zone prefix; set timezone instead")
	case strings.HasPrefix(expr, "@every"):
		return nil, invalid("cron expr", a.Expr, "@every; use the interval trigger instead")
	}
	loc := time.UTC
	if a.Timezone != "" {
		var err error
		if loc, err = time.LoadLocation(a.Timezone); err != nil {
			return nil, invalid("cron timezone", a.Timezone, err.Error())
		}
	}
	parsed, err := cronParser.Parse(expr)
	if err != nil {
		return nil, invalid("cron expr", a.Expr, err.Error())
	}
	spec, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		return nil, invalid("cron expr", a.Expr, fmt.Sprintf("unsupported schedule %T", parsed))
	}
	spec.Location = loc
	t := cronTrigger{spec: spec}
	// Any expression that matches a day matches one within five years of
	// any instant: the robfig search horizon.
	if _, ok := t.Next(minTime); !ok {
		return nil, invalid("cron expr", a.Expr, "matches no date")
	}
	return t, nil
}

// cronTrigger fires at the times of a cron schedule, whole seconds.
type cronTrigger struct {
	spec *cron.SpecSchedule
}

// Next implements [Trigger].
func (c cronTrigger) Next(t time.Time) (time.Time, bool) {
	next := c.spec.Next(t.UTC())
	if next.IsZero() {
		return time.Time{}, false
	}
	next = next.UTC()
	return next, storable(next)
}

func (c cronTrigger) first(now time.Time) (time.Time, bool) {
	return c.Next(now.Add(-time.Nanosecond))
}
