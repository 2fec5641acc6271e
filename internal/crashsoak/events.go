package crashsoak

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/duradyn/duradyn/durable"
)

// A worker process tells its parent what it does on standard output, a line
// an event, each stamped with the time (epoch ms) it happened at:
//
//	READY <pid>                        the runtime runs
//	HOLD <kind> <key> <ms>             a victim holds work (kind KindActivity, KindTurn, KindHanded)
//	DROP <kind> <key> <ms>             a victim let go of work it held, its lease lost
//	PICK <activity|turn> <key> <attempt> <ms>  a fetch returned work
//
// A key is an instance for a turn, "<instance>#<activity id>" for an
// activity.
type events struct {
	mu  sync.Mutex
	out io.Writer
}

func (e *events) line(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	fmt.Fprintf(e.out, format+"\n", args...)
}

func nowMs() int64 {
	//durablevet:ignore an event's stamp for the parent, not part of any turn's outcome
	return time.Now().UnixMilli()
}

func activityKey(instance string, id uint64) string {
	return instance + "#" + strconv.FormatUint(id, 10)
}

// held reports an activity held while it runs (ctx its context).
func (e *events) held(ctx context.Context, kind string) {
	info, _ := durable.ActivityInfoFrom(ctx)
	e.line("HOLD %s %s %d", kind, activityKey(info.Instance, info.ID), nowMs())
}

// dropped reports that a victim let go of an activity it held, alive (ctx
// its context).
func (e *events) dropped(ctx context.Context, kind string) {
	info, _ := durable.ActivityInfoFrom(ctx)
	e.line("DROP %s %s %d", kind, activityKey(info.Instance, info.ID), nowMs())
}

func (e *events) heldTurn(instance string) { e.line("HOLD %s %s %d", KindTurn, instance, nowMs()) }

func (e *events) heldHanded(instance string, id uint64) {
	e.line("HOLD %s %s %d", KindHanded, activityKey(instance, id), nowMs())
}

func (e *events) pickedActivity(instance string, id uint64, attempt uint32) {
	e.line("PICK activity %s %d %d", activityKey(instance, id), attempt, nowMs())
}

func (e *events) pickedTurn(instance string, attempt uint32) {
	e.line("PICK turn %s %d %d", instance, attempt, nowMs())
}

// event is one parsed line of a worker's output.
type event struct {
	verb, kind, key string
	at              time.Time
}

// parseEvent parses a HOLD, DROP or PICK line; ok is false for any other.
func parseEvent(line string) (ev event, ok bool) {
	f := strings.Fields(line)
	switch {
	case len(f) == 4 && (f[0] == "HOLD" || f[0] == "DROP"), len(f) == 5 && f[0] == "PICK":
	default:
		return event{}, false
	}
	ms, err := strconv.ParseInt(f[len(f)-1], 10, 64)
	if err != nil {
		return event{}, false
	}
	return event{verb: f[0], kind: f[1], key: f[2], at: time.UnixMilli(ms)}, true
}
