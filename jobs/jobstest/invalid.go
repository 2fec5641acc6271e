package jobstest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/duradyn/duradyn/jobs"
)

// Times a store refuses.
var (
	notUTC       = time.Date(2030, 1, 2, 3, 4, 5, 0, time.FixedZone("CET", 3600))
	utcLookAlike = time.Date(2030, 1, 2, 3, 4, 5, 0, time.FixedZone("UTC", 0))
	beforeEpoch  = time.Date(1969, 12, 31, 23, 59, 59, 0, time.UTC)
	afterYear    = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	badUTF8      = "bad\xffutf8"
)

func testInvalidCreate(t *testing.T, s jobs.Store) {
	mustCreate(t, s, jobs.Job{ID: "existing"})
	for name, job := range map[string]jobs.Job{
		"empty id":                    {},
		"id too long":                 {ID: strings.Repeat("x", jobs.MaxIDBytes+1)},
		"id not UTF-8":                {ID: badUTF8},
		"unknown status":              {ID: "j", Status: "sleeping"},
		"unknown misfire policy":      {ID: "j", IfMissed: "sometimes"},
		"negative threshold":          {ID: "j", MisfireThresholdSeconds: -1},
		"next run time not UTC":       {ID: "j", NextRunTime: &notUTC},
		"next run time fixed UTC":     {ID: "j", NextRunTime: &utcLookAlike},
		"next run time before epoch":  {ID: "j", NextRunTime: &beforeEpoch},
		"next run time after 9999":    {ID: "j", NextRunTime: &afterYear},
		"last run time not UTC":       {ID: "j", LastRunTime: &notUTC},
		"last scheduled time not UTC": {ID: "j", LastScheduledTime: &notUTC},
		"last run time before epoch":  {ID: "j", LastRunTime: &beforeEpoch},
		"trigger args not JSON":       {ID: "j", TriggerArgs: json.RawMessage(`{"a":`)},
		"trigger args not an object":  {ID: "j", TriggerArgs: json.RawMessage(`[1]`)},
		"name not UTF-8":              {ID: "j", Name: badUTF8},
		"trigger type not UTF-8":      {ID: "j", TriggerType: badUTF8},
		"metadata key not UTF-8":      {ID: "j", Metadata: map[string]string{badUTF8: "v"}},
		"metadata value not UTF-8":    {ID: "j", Metadata: map[string]string{"k": badUTF8}},
		"existing id, bad status":     {ID: "existing", Status: "sleeping"},
	} {
		_, err := s.Create(ctx(t), job)
		wantErr(t, "Create with "+name, err, jobs.ErrInvalidJob)
		if job.ID == "j" {
			_, err := s.Get(ctx(t), "j")
			wantErr(t, "Get after Create with "+name, err, jobs.ErrJobNotFound)
		}
	}
	wantCount(t, s, jobs.Filter{}, 1)
	wantIDs(t, s, jobs.Filter{}, "existing")
}

// badChanges lists changes every store refuses, by what is wrong.
func badChanges() map[string]jobs.Changes {
	return map[string]jobs.Changes{
		"unknown field":                   {"colour": "red"},
		"job id":                          {"job_id": "other"},
		"status as string":                {jobs.FieldStatus: "scheduled"},
		"unknown status":                  {jobs.FieldStatus: jobs.Status("sleeping")},
		"nil status":                      {jobs.FieldStatus: nil},
		"misfire policy as string":        {jobs.FieldIfMissed: "skip"},
		"unknown misfire policy":          {jobs.FieldIfMissed: jobs.IfMissed("sometimes")},
		"threshold as int64":              {jobs.FieldMisfireThresholdSeconds: int64(3)},
		"negative threshold":              {jobs.FieldMisfireThresholdSeconds: -1},
		"next run time as pointer":        {jobs.FieldNextRunTime: &notUTC},
		"next run time as string":         {jobs.FieldNextRunTime: "2030-01-02T03:04:05Z"},
		"next run time not UTC":           {jobs.FieldNextRunTime: notUTC},
		"next run time before epoch":      {jobs.FieldNextRunTime: beforeEpoch},
		"last run time not UTC":           {jobs.FieldLastRunTime: notUTC},
		"last scheduled time after 9999":  {jobs.FieldLastScheduledTime: afterYear},
		"metadata of any":                 {jobs.FieldMetadata: map[string]any{"k": 1}},
		"metadata value not UTF-8":        {jobs.FieldMetadata: map[string]string{"k": badUTF8}},
		"name not a string":               {jobs.FieldName: 3},
		"name not UTF-8":                  {jobs.FieldName: badUTF8},
		"nil name":                        {jobs.FieldName: nil},
		"trigger type not a string":       {jobs.FieldTriggerType: []byte("cron")},
		"trigger args as string":          {jobs.FieldTriggerArgs: `{"a":1}`},
		"trigger args as bytes":           {jobs.FieldTriggerArgs: []byte(`{"a":1}`)},
		"trigger args not JSON":           {jobs.FieldTriggerArgs: json.RawMessage(`{`)},
		"good and bad fields":             {jobs.FieldName: "fine", jobs.FieldStatus: jobs.Status("sleeping")},
		"good time and an unknown field":  {jobs.FieldNextRunTime: at(0), "colour": "red"},
		"good metadata and a bad value":   {jobs.FieldMetadata: map[string]string{"k": "v"}, jobs.FieldIfMissed: jobs.IfMissed("")},
		"trigger args an object in array": {jobs.FieldTriggerArgs: json.RawMessage(`[{}]`)},
	}
}

func testInvalidChanges(t *testing.T, s jobs.Store) {
	want := mustCreate(t, s, fullJob("j"))
	good := jobs.Changes{jobs.FieldName: "changed"}
	for name, bad := range badChanges() {
		_, err := s.Update(ctx(t), "j", bad)
		wantErr(t, "Update with "+name, err, jobs.ErrInvalidJob)
		_, err = s.Update(ctx(t), "absent", bad)
		wantErr(t, "Update of a missing job with "+name, err, jobs.ErrInvalidJob)
		applied, _, err := s.CompareAndSwap(ctx(t), "j", nil, bad)
		wantErr(t, "CompareAndSwap with changes "+name, err, jobs.ErrInvalidJob)
		if applied {
			t.Fatalf("CompareAndSwap with changes %s applied", name)
		}
		applied, _, err = s.CompareAndSwap(ctx(t), "j", bad, good)
		wantErr(t, "CompareAndSwap expecting "+name, err, jobs.ErrInvalidJob)
		if applied {
			t.Fatalf("CompareAndSwap expecting %s applied", name)
		}
		wantJob(t, "job after "+name, mustGet(t, s, "j"), want)
	}
	wantCount(t, s, jobs.Filter{}, 1)
}

func testInvalidFilter(t *testing.T, s jobs.Store) {
	mustCreate(t, s, fullJob("j"))
	for name, filter := range map[string]jobs.Filter{
		"unknown status":       {Status: []jobs.Status{jobs.StatusScheduled, "sleeping"}},
		"empty status":         {Status: []jobs.Status{""}},
		"time not UTC":         {NextRunTimeLTE: &notUTC},
		"time before epoch":    {NextRunTimeLTE: &beforeEpoch},
		"time after year 9999": {NextRunTimeLTE: &afterYear},
		"negative limit":       {Limit: -1},
		"negative offset":      {Offset: -1},
	} {
		_, err := s.Query(ctx(t), filter)
		wantErr(t, "Query with "+name, err, jobs.ErrInvalidJob)
		_, err = s.Count(ctx(t), filter)
		wantErr(t, "Count with "+name, err, jobs.ErrInvalidJob)
	}
}
