package jobs_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/jobs"
	"github.com/duradyn/duradyn/queues"
)

// rawItem reads the item of the job with id as DynamoDB holds it.
func (env *dynamoEnv) rawItem(t *testing.T, id string) map[string]types.AttributeValue {
	t.Helper()
	out, err := env.db.GetItem(t.Context(), &dynamodb.GetItemInput{
		TableName: aws.String(env.table),
		Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: "J#" + id},
			"sk": &types.AttributeValueMemberS{Value: "#JOB"},
		},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatalf("GetItem: %v", err)
	}
	return out.Item
}

// show formats an attribute value.
func show(av types.AttributeValue) string {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return "S:" + v.Value
	case *types.AttributeValueMemberN:
		return "N:" + v.Value
	case *types.AttributeValueMemberM:
		var parts []string
		for k, e := range v.Value {
			parts = append(parts, k+"="+show(e))
		}
		return "M:" + strings.Join(parts, ",")
	case nil:
		return "absent"
	}
	return fmt.Sprintf("%T", av)
}

// The item holds the documented keys and attributes, and its index sort
// key follows the next run time.
func TestDynamoStore_ItemLayout(t *testing.T) {
	t.Parallel()
	env := newDynamoEnv(t)
	s := env.store(t)
	next := time.Date(2030, 1, 2, 3, 4, 5, 678_900_000, time.UTC)
	job := jobs.Job{
		ID: "tenant#1", NextRunTime: &next, IfMissed: jobs.RunOnce, MisfireThresholdSeconds: 9,
		Metadata: map[string]string{"t": "x"}, Name: "n", TriggerType: "date", TriggerArgs: []byte(`{"a":1}`),
	}
	if _, err := s.Create(t.Context(), job); err != nil {
		t.Fatalf("Create: %v", err)
	}
	item := env.rawItem(t, "tenant#1")
	want := map[string]string{
		"pk":                        "S:J#tenant#1",
		"sk":                        "S:#JOB",
		"li_pk":                     fmt.Sprintf("S:J#%d", s.Shard("tenant#1")),
		"li_sk":                     "S:00000001893553445678#tenant#1",
		"status":                    "S:scheduled",
		"next_run_time":             "N:1893553445678",
		"if_missed":                 "S:run_once",
		"misfire_threshold_seconds": "N:9",
		"M":                         "M:t=S:x",
		"name":                      "S:n",
		"trigger_type":              "S:date",
		"trigger_args":              `S:{"a":1}`,
	}
	for name, value := range want {
		if got := show(item[name]); got != value {
			t.Errorf("attribute %s = %s, want %s", name, got, value)
		}
	}
	if len(item) != len(want)+1 || item["wid"] == nil {
		t.Errorf("item has %d attributes, want the %d documented and wid: %v", len(item), len(want), item)
	}

	if _, err := s.Update(t.Context(), "tenant#1", jobs.Changes{jobs.FieldNextRunTime: nil, jobs.FieldName: ""}); err != nil {
		t.Fatalf("Update: %v", err)
	}
	item = env.rawItem(t, "tenant#1")
	if got := show(item["li_sk"]); got != "S:~#tenant#1" {
		t.Errorf("li_sk without a next run time = %s", got)
	}
	for _, name := range []string{"next_run_time", "name"} {
		if item[name] != nil {
			t.Errorf("attribute %s = %s, want absent", name, show(item[name]))
		}
	}

	long := strings.Repeat("é", jobs.MaxIDBytes/2)
	if _, err := s.Create(t.Context(), jobs.Job{ID: long, NextRunTime: &next}); err != nil {
		t.Fatalf("Create with a long id: %v", err)
	}
	sk := show(env.rawItem(t, long)["li_sk"])
	if !strings.HasPrefix(sk, "S:00000001893553445678!") || len(sk) != len("S:00000001893553445678!")+64 {
		t.Errorf("li_sk of a long id = %s, want the time, '!' and a SHA-256", sk)
	}
}

func TestNewDynamoStore_Options(t *testing.T) {
	for name, fn := range map[string]func(*jobs.DynamoOptions){
		"no table": func(o *jobs.DynamoOptions) {},
		"negative skew warning": func(o *jobs.DynamoOptions) {
			o.TableName, o.ClockSkewWarning = "t", -time.Second
		},
	} {
		if _, err := jobs.NewDynamoStore(aws.Config{}, fn); !errors.Is(err, jobs.ErrInvalidOptions) {
			t.Errorf("NewDynamoStore with %s: %v, want ErrInvalidOptions", name, err)
		}
	}
	s, err := jobs.NewDynamoStore(aws.Config{}, func(o *jobs.DynamoOptions) { o.TableName = "t" })
	if err != nil {
		t.Fatalf("NewDynamoStore: %v", err)
	}
	for _, id := range []string{"a", "b", "tenant#1"} {
		if shard := s.Shard(id); shard < 0 || shard >= jobs.JobShards {
			t.Errorf("Shard(%q) = %d, outside the default %d shards", id, shard, jobs.JobShards)
		}
	}
}

// Writes that give a job a next run time, or move it earlier, or make a
// job with one scheduled, send a Schedule signal; others do not.
func TestDynamoStore_Signals(t *testing.T) {
	t.Parallel()
	env := newDynamoEnv(t)
	signals, err := queues.New(nil)
	if err != nil {
		t.Fatalf("queues.New: %v", err)
	}
	t.Cleanup(func() { signals.Close() })
	s := env.store(t, func(o *jobs.DynamoOptions) { o.Signals = signals })
	ctx := t.Context()
	base := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC) // past: delivered at once
	tm := func(minutes int) time.Time { return base.Add(time.Duration(minutes) * time.Minute) }
	// collect returns the signals sent since the last call.
	collect := func() []time.Time {
		t.Helper()
		sigs, err := signals.Wait(ctx, queues.Schedule, 0)
		if err != nil {
			t.Fatalf("Wait: %v", err)
		}
		var got []time.Time
		for _, sig := range sigs {
			if sig.Kind != queues.Schedule || sig.Shard != s.Shard("j") {
				t.Fatalf("signal %+v, want kind Schedule, shard %d", sig, s.Shard("j"))
			}
			got = append(got, sig.VisibleAt.UTC())
		}
		return got
	}
	want := func(what string, times ...time.Time) {
		t.Helper()
		got := collect()
		if fmt.Sprint(got) != fmt.Sprint(times) {
			t.Fatalf("%s: signals at %v, want %v", what, got, times)
		}
	}
	collect()

	if _, err := s.Create(ctx, jobs.Job{ID: "j", Status: jobs.StatusPaused}); err != nil {
		t.Fatalf("Create: %v", err)
	}
	want("create without a next run time")
	if _, err := s.Update(ctx, "j", jobs.Changes{jobs.FieldNextRunTime: tm(10)}); err != nil {
		t.Fatalf("Update: %v", err)
	}
	want("next run time set", tm(10))
	if _, err := s.Update(ctx, "j", jobs.Changes{jobs.FieldNextRunTime: tm(20)}); err != nil {
		t.Fatalf("Update: %v", err)
	}
	want("next run time moved later")
	if _, _, err := s.CompareAndSwap(ctx, "j", nil, jobs.Changes{jobs.FieldNextRunTime: tm(5)}); err != nil {
		t.Fatalf("CompareAndSwap: %v", err)
	}
	want("next run time moved earlier", tm(5))
	if _, err := s.Update(ctx, "j", jobs.Changes{jobs.FieldStatus: jobs.StatusScheduled}); err != nil {
		t.Fatalf("Update: %v", err)
	}
	want("resumed", tm(5))
	if _, _, err := s.CompareAndSwap(ctx, "j", jobs.Changes{jobs.FieldStatus: jobs.StatusPaused}, jobs.Changes{jobs.FieldNextRunTime: tm(1)}); err != nil {
		t.Fatalf("CompareAndSwap: %v", err)
	}
	want("swap not applied")
	if _, err := s.Delete(ctx, "j"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := s.Create(ctx, jobs.Job{ID: "j", NextRunTime: ptrTime(tm(3))}); err != nil {
		t.Fatalf("Create: %v", err)
	}
	want("create with a next run time", tm(3))
}

func ptrTime(t time.Time) *time.Time { return &t }

// A job too large for one item is refused with ErrInvalidJob, and nothing
// is written.
func TestDynamoStore_TooLarge(t *testing.T) {
	t.Parallel()
	env := newDynamoEnv(t)
	s := env.store(t)
	ctx := t.Context()
	big := []byte(`{"pad":"` + strings.Repeat("p", 450<<10) + `"}`)
	_, err := s.Create(ctx, jobs.Job{ID: "big", TriggerArgs: big})
	if !errors.Is(err, jobs.ErrInvalidJob) {
		t.Fatalf("Create of a 450 KB job: %v, want ErrInvalidJob", err)
	}
	if _, err := s.Get(ctx, "big"); !errors.Is(err, jobs.ErrJobNotFound) {
		t.Fatalf("Get after the refused create: %v, want ErrJobNotFound", err)
	}
	if _, err := s.Create(ctx, jobs.Job{ID: "small"}); err != nil {
		t.Fatalf("Create: %v", err)
	}
	_, err = s.Update(ctx, "small", jobs.Changes{jobs.FieldTriggerArgs: json.RawMessage(big)})
	if !errors.Is(err, jobs.ErrInvalidJob) {
		t.Fatalf("Update to a 450 KB job: %v, want ErrInvalidJob", err)
	}
	_, _, err = s.CompareAndSwap(ctx, "small", nil, jobs.Changes{jobs.FieldTriggerArgs: json.RawMessage(big)})
	if !errors.Is(err, jobs.ErrInvalidJob) {
		t.Fatalf("CompareAndSwap to a 450 KB job: %v, want ErrInvalidJob", err)
	}
	if job, err := s.Get(ctx, "small"); err != nil || job.TriggerArgs != nil {
		t.Fatalf("Get after the refused writes = %+v, %v", job, err)
	}
}
