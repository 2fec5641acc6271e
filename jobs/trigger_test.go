package jobs

import (
	"encoding/json"
	"errors"
	"testing"
	"time"
	_ "time/tzdata" // the cron tests read time zones on any host
)

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

func TestTriggerNext(t *testing.T) {
	tests := []struct {
		name     string
		typ      string
		args     string
		after    string
		want     string // "" when there is no next time
		wantNext string // the time after want, "" to skip
	}{
		{"cron every 5 minutes", TriggerCron, `{"expr": "*/5 * * * *"}`, "2025-01-01T00:02:30Z", "2025-01-01T00:05:00Z", "2025-01-01T00:10:00Z"},
		{"cron strictly after", TriggerCron, `{"expr": "* * * * *"}`, "2025-01-01T00:01:00Z", "2025-01-01T00:02:00Z", "2025-01-01T00:03:00Z"},
		{"cron sub-second", TriggerCron, `{"expr": "* * * * *"}`, "2025-01-01T00:00:59.999Z", "2025-01-01T00:01:00Z", ""},
		{"cron descriptor", TriggerCron, `{"expr": "@daily"}`, "2025-03-04T10:00:00Z", "2025-03-05T00:00:00Z", "2025-03-06T00:00:00Z"},
		{"cron names", TriggerCron, `{"expr": "0 9 * JAN MON"}`, "2025-01-01T00:00:00Z", "2025-01-06T09:00:00Z", "2025-01-13T09:00:00Z"},
		{"cron time zone", TriggerCron, `{"expr": "0 9 * * *", "timezone": "Europe/Berlin"}`, "2025-01-01T00:00:00Z", "2025-01-01T08:00:00Z", "2025-01-02T08:00:00Z"},
		{"cron time zone in summer", TriggerCron, `{"expr": "0 9 * * *", "timezone": "Europe/Berlin"}`, "2025-07-01T00:00:00Z", "2025-07-01T07:00:00Z", ""},
		{"cron across spring forward", TriggerCron, `{"expr": "30 2 * * *", "timezone": "Europe/Berlin"}`, "2025-03-29T02:00:00Z", "2025-03-31T00:30:00Z", ""},
		{"cron across fall back", TriggerCron, `{"expr": "30 2 * * *", "timezone": "Europe/Berlin"}`, "2025-10-25T12:00:00Z", "2025-10-26T00:30:00Z", "2025-10-26T01:30:00Z"},
		{"interval before start", TriggerInterval, `{"every_seconds": 60, "start": "2025-01-01T00:00:00Z"}`, "2024-12-31T00:00:00Z", "2025-01-01T00:00:00Z", "2025-01-01T00:01:00Z"},
		{"interval on the grid", TriggerInterval, `{"every_seconds": 60, "start": "2025-01-01T00:00:00.250Z"}`, "2025-01-01T00:10:00.250Z", "2025-01-01T00:11:00.250Z", ""},
		{"interval between", TriggerInterval, `{"every_seconds": 3600, "start": "2025-01-01T01:00:00+01:00"}`, "2025-01-01T05:59:59.999Z", "2025-01-01T06:00:00Z", "2025-01-01T07:00:00Z"},
		{"interval without start", TriggerInterval, `{"every_seconds": 86400}`, "2025-01-01T12:00:00Z", "2025-01-02T00:00:00Z", ""},
		{"interval start kept to the millisecond", TriggerInterval, `{"every_seconds": 1, "start": "2025-01-01T00:00:00.1239Z"}`, "2024-01-01T00:00:00Z", "2025-01-01T00:00:00.123Z", "2025-01-01T00:00:01.123Z"},
		{"date before", TriggerDate, `{"at": "2025-06-01T09:00:00+02:00"}`, "2025-01-01T00:00:00Z", "2025-06-01T07:00:00Z", ""},
		{"date at", TriggerDate, `{"at": "2025-06-01T07:00:00Z"}`, "2025-06-01T07:00:00Z", "", ""},
		{"date after", TriggerDate, `{"at": "2025-06-01T07:00:00Z"}`, "2026-01-01T00:00:00Z", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			trig, err := ParseTrigger(tt.typ, json.RawMessage(tt.args))
			if err != nil {
				t.Fatal(err)
			}
			got, ok := trig.Next(utc(tt.after))
			if tt.want == "" {
				if ok {
					t.Fatalf("Next(%s) = %s, want none", tt.after, got)
				}
				return
			}
			if !ok || !got.Equal(utc(tt.want)) || got.Location() != time.UTC {
				t.Fatalf("Next(%s) = %s, %v; want %s", tt.after, got, ok, tt.want)
			}
			if tt.wantNext == "" {
				return
			}
			if next, ok := trig.Next(got); !ok || !next.Equal(utc(tt.wantNext)) {
				t.Fatalf("Next(%s) = %s, %v; want %s", got, next, ok, tt.wantNext)
			}
		})
	}
}

func TestTriggerFirst(t *testing.T) {
	now := utc("2025-01-01T00:01:00Z")
	tests := []struct {
		name string
		typ  string
		args string
		want string
	}{
		{"cron due now", TriggerCron, `{"expr": "* * * * *"}`, "2025-01-01T00:01:00Z"},
		{"cron later", TriggerCron, `{"expr": "0 * * * *"}`, "2025-01-01T01:00:00Z"},
		{"interval due now", TriggerInterval, `{"every_seconds": 60, "start": "2024-12-31T00:00:00Z"}`, "2025-01-01T00:01:00Z"},
		{"interval from a past start", TriggerInterval, `{"every_seconds": 3600, "start": "2024-12-31T00:30:00Z"}`, "2025-01-01T00:30:00Z"},
		{"date in the past", TriggerDate, `{"at": "2024-01-01T00:00:00Z"}`, "2024-01-01T00:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			trig, err := ParseTrigger(tt.typ, json.RawMessage(tt.args))
			if err != nil {
				t.Fatal(err)
			}
			if got, ok := trig.first(now); !ok || !got.Equal(utc(tt.want)) {
				t.Fatalf("first(%s) = %s, %v; want %s", now, got, ok, tt.want)
			}
		})
	}
}

func TestParseTriggerRefusesBadInput(t *testing.T) {
	tests := []struct {
		name string
		typ  string
		args string
	}{
		{"unknown type", "weekly", `{"expr": "* * * * *"}`},
		{"empty type", "", `{}`},
		{"no arguments", TriggerCron, ``},
		{"not an object", TriggerCron, `"* * * * *"`},
		{"trailing data", TriggerCron, `{"expr": "* * * * *"} {}`},
		{"unknown field", TriggerCron, `{"expression": "* * * * *"}`},
		{"empty cron", TriggerCron, `{"expr": " "}`},
		{"malformed cron", TriggerCron, `{"expr": "61 * * * *"}`},
		{"six fields", TriggerCron, `{"expr": "0 * * * * *"}`},
		{"four fields", TriggerCron, `{"expr": "* * * *"}`},
		{"unknown descriptor", TriggerCron, `{"expr": "@fortnightly"}`},
		{"every", TriggerCron, `{"expr": "@every 5m"}`},
		{"zone prefix", TriggerCron, `{"expr": "CRON_TZ=Europe/Berlin * * * * *"}`},
		{"never matches", TriggerCron, `{"expr": "0 0 30 2 *"}`},
		{"unknown time zone", TriggerCron, `{"expr": "* * * * *", "timezone": "Mars/Olympus_Mons"}`},
		{"interval zero", TriggerInterval, `{"every_seconds": 0}`},
		{"interval negative", TriggerInterval, `{"every_seconds": -60}`},
		{"interval fraction", TriggerInterval, `{"every_seconds": 1.5}`},
		{"interval too long", TriggerInterval, `{"every_seconds": 3162240001}`},
		{"interval bad start", TriggerInterval, `{"every_seconds": 60, "start": "yesterday"}`},
		{"interval start before 1970", TriggerInterval, `{"every_seconds": 60, "start": "1969-12-31T23:59:59Z"}`},
		{"date missing", TriggerDate, `{}`},
		{"date malformed", TriggerDate, `{"at": "2025-13-01T00:00:00Z"}`},
		{"date after 9999", TriggerDate, `{"at": "9999-12-31T23:59:59-01:00"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			trig, err := ParseTrigger(tt.typ, json.RawMessage(tt.args))
			if !errors.Is(err, ErrInvalidJob) {
				t.Fatalf("ParseTrigger(%q, %s) = %v, %v; want an error wrapping ErrInvalidJob", tt.typ, tt.args, trig, err)
			}
		})
	}
}

func TestSetTrigger(t *testing.T) {
	job := Job{ID: "j"}
	start := utc("2025-01-01T00:00:00Z")
	if err := SetTrigger(&job, IntervalArgs{EverySeconds: 60, Start: &start}); err != nil {
		t.Fatal(err)
	}
	if job.TriggerType != TriggerInterval || string(job.TriggerArgs) != `{"every_seconds":60,"start":"2025-01-01T00:00:00Z"}` {
		t.Fatalf("job = %+v", job)
	}
	if err := SetTrigger(&job, CronArgs{Expr: "not cron"}); !errors.Is(err, ErrInvalidJob) {
		t.Fatalf("SetTrigger of a malformed cron = %v", err)
	}
	if job.TriggerType != TriggerInterval {
		t.Fatalf("a refused SetTrigger changed the job: %+v", job)
	}
	if err := SetTrigger(&job, DateArgs{At: time.Date(2025, 6, 1, 9, 0, 0, 0, time.FixedZone("CEST", 7200))}); err != nil {
		t.Fatal(err)
	}
	if string(job.TriggerArgs) != `{"at":"2025-06-01T09:00:00+02:00"}` {
		t.Fatalf("date args = %s", job.TriggerArgs)
	}
}
