package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// shown is `terraform show -json` of an applied examples/lambda, cut down
// to what the checks read; mutate changes it before it is encoded.
func shown(t *testing.T, mutate func(map[string]map[string]any)) state {
	t.Helper()
	queueARN := func(k string) string { return "arn:aws:sqs:us-east-1:123456789012:ex-" + k }
	res := map[string]map[string]any{
		`module.duradyn.aws_dynamodb_table.this[0]`:         {"name": "ex"},
		`module.duradyn.aws_sqs_queue.this["orchestrator"]`: {"url": "http://q/ex-orchestrator", "arn": queueARN("orchestrator")},
		`module.duradyn.aws_sqs_queue.this["worker"]`:       {"url": "http://q/ex-worker", "arn": queueARN("worker")},
		`module.worker.aws_lambda_function.this`: {"arn": "arn:fn", "function_name": "ex-worker", "runtime": "provided.al2023",
			"architectures": []any{"arm64"}, "handler": "bootstrap", "timeout": 30.0, "memory_size": 256.0, "role": "arn:role",
			"environment": []any{map[string]any{"variables": map[string]any{"DURADYN_TABLE": "ex",
				"DURADYN_ORCHESTRATOR_QUEUE_URL": "http://q/ex-orchestrator", "DURADYN_WORKER_QUEUE_URL": "http://q/ex-worker"}}}},
		`module.worker.aws_iam_role.this`:             {"arn": "arn:role", "assume_role_policy": `{"Principal":{"Service":"lambda.amazonaws.com"}}`},
		`module.worker.aws_iam_role.scheduler`:        {"arn": "arn:sched-role"},
		`module.worker.aws_iam_role_policy.duradyn`:   {"policy": `["dynamodb:PutItem","dynamodb:Query","sqs:SendMessage"]`},
		`module.worker.aws_iam_role_policy.lambda`:    {"policy": `["sqs:ChangeMessageVisibility","sqs:GetQueueAttributes","sqs:ReceiveMessage","sqs:DeleteMessage","logs:PutLogEvents"]`},
		`module.worker.aws_cloudwatch_log_group.this`: {"name": "/aws/lambda/ex-worker", "retention_in_days": 14.0},
		`module.worker.aws_scheduler_schedule.sweep`: {"schedule_expression": "rate(1 minute)", "state": "ENABLED",
			"target": []any{map[string]any{"arn": "arn:fn", "role_arn": "arn:sched-role", "input": `{"duradyn":"sweep"}`}}},
	}
	for _, k := range []string{"orchestrator", "worker"} {
		res[`module.worker.aws_lambda_event_source_mapping.this["`+k+`"]`] = map[string]any{
			"event_source_arn": queueARN(k), "function_arn": "arn:fn", "state": "Enabled",
			"function_response_types": []any{"ReportBatchItemFailures"}, "batch_size": 10.0,
			"maximum_batching_window_in_seconds": 0.0, "scaling_config": []any{map[string]any{"maximum_concurrency": 10.0}}}
	}
	for _, a := range []string{"errors", "throttles", "orchestrator-queue-age", "worker-queue-age", "dynamodb-read-throttles", "dynamodb-write-throttles"} {
		res[`module.worker.aws_cloudwatch_metric_alarm.this["`+a+`"]`] = map[string]any{"alarm_name": "ex-worker-" + a}
	}
	if mutate != nil {
		mutate(res)
	}
	var resources []map[string]any
	for addr, v := range res {
		typ := addr[strings.LastIndex(addr[:strings.LastIndexAny(addr, ".")], ".")+1 : strings.LastIndexAny(addr, ".")]
		resources = append(resources, map[string]any{"address": addr, "type": typ, "values": v})
	}
	doc, err := json.Marshal(map[string]any{"values": map[string]any{"root_module": map[string]any{
		"child_modules": []any{map[string]any{"resources": resources}}}}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := readState(strings.NewReader(string(doc)))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var defaults = want{timeout: 30, memory: 256, batchSize: 10, window: 0, maxConcurrency: 10, retention: 14, schedule: "rate(1 minute)"}

// TestCheckPassesWhatWasConfigured: the state of an example applied as
// configured passes every check.
func TestCheckPassesWhatWasConfigured(t *testing.T) {
	if err := check(shown(t, nil), defaults); err != nil {
		t.Fatal(err)
	}
}

// TestCheckNamesWhatDiffers: a setting the emulator holds otherwise, a
// missing permission and a missing alarm each fail the check, by name.
func TestCheckNamesWhatDiffers(t *testing.T) {
	for name, c := range map[string]struct {
		mutate func(map[string]map[string]any)
		want   string
	}{
		"batch size": {func(r map[string]map[string]any) {
			r[`module.worker.aws_lambda_event_source_mapping.this["worker"]`]["batch_size"] = 5.0
		}, "the worker mapping's batch size is 5, want 10"},
		"response types": {func(r map[string]map[string]any) {
			r[`module.worker.aws_lambda_event_source_mapping.this["orchestrator"]`]["function_response_types"] = []any{}
		}, "the orchestrator mapping's response types"},
		"permission": {func(r map[string]map[string]any) {
			r[`module.worker.aws_iam_role_policy.lambda`]["policy"] = `["sqs:ReceiveMessage"]`
		}, "lacks sqs:ChangeMessageVisibility"},
		"alarm": {func(r map[string]map[string]any) {
			delete(r, `module.worker.aws_cloudwatch_metric_alarm.this["throttles"]`)
		}, "the alarms is"},
		"architecture": {func(r map[string]map[string]any) {
			r[`module.worker.aws_lambda_function.this`]["architectures"] = []any{"x86_64"}
		}, "its architectures is [x86_64], want [arm64]"},
	} {
		t.Run(name, func(t *testing.T) {
			err := check(shown(t, c.mutate), defaults)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("check = %v, want an error containing %q", err, c.want)
			}
		})
	}
}
