// Command lambdasmoke checks what terraform apply of examples/lambda
// created on an AWS emulator: make tf-test (scripts/tf-test-lambda) runs it
// on `terraform show -json` after a refresh, so that every value it checks
// is what the emulator answers for the resource, not what the
// configuration asked for. It checks
//
//   - the function: provided.al2023, arm64, handler bootstrap, the timeout
//     and memory given, the execution role, and the environment naming the
//     table and both queues;
//   - an event source mapping on each queue, enabled, for the function,
//     with ReportBatchItemFailures and the batch size, batching window and
//     maximum concurrency given;
//   - the sweep schedule: enabled, the expression given, invoking the
//     function with {"duradyn":"sweep"} through a role of its own;
//   - the execution role: assumed by Lambda, with the duradyn policy and
//     the mappings' and logs' policy;
//   - the log group with its retention, and the six alarms.
//
// Usage:
//
//	terraform show -json | lambdasmoke -timeout 30 -memory 256 -batch-size 10 -window 0 -max-concurrency 10 -schedule 'rate(1 minute)'
//
// The emulator creates the function but cannot run it; lambdasmoke drive
// (drive.go) runs its bootstrap as Lambda would, on the applied queues, so
// that the CLI can start an instance on the deployed table and wait for it.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// want is what the configuration asked for.
type want struct {
	timeout, memory, batchSize, window, maxConcurrency, retention float64
	schedule                                                      string
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "drive" {
		if err := drive(os.Args[2:]); err != nil {
			fmt.Fprintf(os.Stderr, "lambdasmoke drive: %v\n", err)
			os.Exit(1)
		}
		return
	}
	var w want
	flag.Float64Var(&w.timeout, "timeout", 30, "the function's timeout")
	flag.Float64Var(&w.memory, "memory", 256, "the function's memory")
	flag.Float64Var(&w.batchSize, "batch-size", 10, "each mapping's batch size")
	flag.Float64Var(&w.window, "window", 0, "each mapping's batching window")
	flag.Float64Var(&w.maxConcurrency, "max-concurrency", 10, "each mapping's maximum concurrency")
	flag.Float64Var(&w.retention, "retention", 14, "the log group's retention in days")
	flag.StringVar(&w.schedule, "schedule", "rate(1 minute)", "the sweep schedule's expression")
	flag.Parse()
	state, err := readState(os.Stdin)
	if err == nil {
		err = check(state, w)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "lambdasmoke: %v\n", err)
		os.Exit(1)
	}
	fmt.Println("lambdasmoke: function, event source mappings, sweep schedule, role, log group and alarms as configured")
}

// resource is one resource of `terraform show -json`.
type resource struct {
	Address string         `json:"address"`
	Type    string         `json:"type"`
	Values  map[string]any `json:"values"`
}

type module struct {
	Resources    []resource `json:"resources"`
	ChildModules []module   `json:"child_modules"`
}

// state is every resource of the shown state, by type.
type state map[string][]resource

func readState(r io.Reader) (state, error) {
	var doc struct {
		Values struct {
			RootModule module `json:"root_module"`
		} `json:"values"`
	}
	if err := json.NewDecoder(r).Decode(&doc); err != nil {
		return nil, fmt.Errorf("read terraform show -json: %w", err)
	}
	s := state{}
	var walk func(m module)
	walk = func(m module) {
		for _, r := range m.Resources {
			s[r.Type] = append(s[r.Type], r)
		}
		for _, c := range m.ChildModules {
			walk(c)
		}
	}
	walk(doc.Values.RootModule)
	return s, nil
}

// one returns the only resource of type typ whose address contains part.
func (s state) one(typ, part string) (map[string]any, error) {
	var found []resource
	for _, r := range s[typ] {
		if strings.Contains(r.Address, part) {
			found = append(found, r)
		}
	}
	if len(found) != 1 {
		return nil, fmt.Errorf("%d resources %s matching %q, want 1", len(found), typ, part)
	}
	return found[0].Values, nil
}

// check runs every check and joins what failed.
func check(s state, w want) error {
	fn, err := s.one("aws_lambda_function", "worker")
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range []func(state, map[string]any, want) error{checkFunction, checkMappings, checkSchedule, checkRole, checkLogsAndAlarms} {
		if err := c(s, fn, w); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// expect compares one value.
func expect(errs *[]error, what string, got, wanted any) {
	if fmt.Sprint(got) != fmt.Sprint(wanted) {
		*errs = append(*errs, fmt.Errorf("%s is %v, want %v", what, got, wanted))
	}
}

// first is the first element of a list attribute (a nested block).
func first(v any) map[string]any {
	if l, ok := v.([]any); ok && len(l) > 0 {
		m, _ := l[0].(map[string]any)
		return m
	}
	return nil
}

func checkFunction(s state, fn map[string]any, w want) error {
	var errs []error
	expect(&errs, "the function's runtime", fn["runtime"], "provided.al2023")
	expect(&errs, "its architectures", fn["architectures"], []any{"arm64"})
	expect(&errs, "its handler", fn["handler"], "bootstrap")
	expect(&errs, "its timeout", fn["timeout"], w.timeout)
	expect(&errs, "its memory", fn["memory_size"], w.memory)
	role, err := s.one("aws_iam_role", "aws_iam_role.this")
	if err != nil {
		return err
	}
	expect(&errs, "its role", fn["role"], role["arn"])
	table, err := s.one("aws_dynamodb_table", "duradyn")
	if err != nil {
		return err
	}
	vars, _ := first(fn["environment"])["variables"].(map[string]any)
	expect(&errs, "its DURADYN_TABLE", vars["DURADYN_TABLE"], table["name"])
	for _, kind := range []string{"orchestrator", "worker"} {
		q, err := s.one("aws_sqs_queue", `["`+kind+`"]`)
		if err != nil {
			return err
		}
		expect(&errs, "its DURADYN_"+strings.ToUpper(kind)+"_QUEUE_URL", vars["DURADYN_"+strings.ToUpper(kind)+"_QUEUE_URL"], q["url"])
	}
	return errors.Join(errs...)
}

func checkMappings(s state, fn map[string]any, w want) error {
	var errs []error
	for _, kind := range []string{"orchestrator", "worker"} {
		q, err := s.one("aws_sqs_queue", `["`+kind+`"]`)
		if err != nil {
			return err
		}
		m, err := s.one("aws_lambda_event_source_mapping", `["`+kind+`"]`)
		if err != nil {
			return err
		}
		what := "the " + kind + " mapping's "
		expect(&errs, what+"queue", m["event_source_arn"], q["arn"])
		expect(&errs, what+"function", m["function_arn"], fn["arn"])
		expect(&errs, what+"state", m["state"], "Enabled")
		expect(&errs, what+"response types", m["function_response_types"], []any{"ReportBatchItemFailures"})
		expect(&errs, what+"batch size", m["batch_size"], w.batchSize)
		expect(&errs, what+"batching window", m["maximum_batching_window_in_seconds"], w.window)
		expect(&errs, what+"maximum concurrency", first(m["scaling_config"])["maximum_concurrency"], w.maxConcurrency)
	}
	return errors.Join(errs...)
}

func checkSchedule(s state, fn map[string]any, w want) error {
	sched, err := s.one("aws_scheduler_schedule", "sweep")
	if err != nil {
		return err
	}
	role, err := s.one("aws_iam_role", "aws_iam_role.scheduler")
	if err != nil {
		return err
	}
	var errs []error
	expect(&errs, "the sweep schedule's expression", sched["schedule_expression"], w.schedule)
	expect(&errs, "its state", sched["state"], "ENABLED")
	target := first(sched["target"])
	expect(&errs, "its target", target["arn"], fn["arn"])
	expect(&errs, "its role", target["role_arn"], role["arn"])
	var input map[string]any
	if err := json.Unmarshal([]byte(fmt.Sprint(target["input"])), &input); err != nil || input["duradyn"] != "sweep" {
		errs = append(errs, fmt.Errorf("its input is %v, want {\"duradyn\":\"sweep\"}", target["input"]))
	}
	return errors.Join(errs...)
}

func checkRole(s state, _ map[string]any, _ want) error {
	role, err := s.one("aws_iam_role", "aws_iam_role.this")
	if err != nil {
		return err
	}
	var errs []error
	if !strings.Contains(fmt.Sprint(role["assume_role_policy"]), "lambda.amazonaws.com") {
		errs = append(errs, errors.New("the execution role is not assumed by lambda.amazonaws.com"))
	}
	for part, actions := range map[string][]string{
		"aws_iam_role_policy.duradyn": {"dynamodb:PutItem", "dynamodb:Query", "sqs:SendMessage"},
		"aws_iam_role_policy.lambda":  {"sqs:ChangeMessageVisibility", "sqs:GetQueueAttributes", "sqs:ReceiveMessage", "sqs:DeleteMessage", "logs:PutLogEvents"},
	} {
		p, err := s.one("aws_iam_role_policy", part)
		if err != nil {
			return err
		}
		doc := fmt.Sprint(p["policy"])
		for _, a := range actions {
			if !strings.Contains(doc, a) {
				errs = append(errs, fmt.Errorf("the role's policy %s lacks %s", part, a))
			}
		}
	}
	return errors.Join(errs...)
}

func checkLogsAndAlarms(s state, fn map[string]any, w want) error {
	var errs []error
	lg, err := s.one("aws_cloudwatch_log_group", "worker")
	if err != nil {
		return err
	}
	expect(&errs, "the log group", lg["name"], "/aws/lambda/"+fmt.Sprint(fn["function_name"]))
	expect(&errs, "its retention", lg["retention_in_days"], w.retention)
	var alarms []string
	for _, a := range s["aws_cloudwatch_metric_alarm"] {
		alarms = append(alarms, strings.TrimPrefix(fmt.Sprint(a.Values["alarm_name"]), fmt.Sprint(fn["function_name"])+"-"))
	}
	slices.Sort(alarms)
	expect(&errs, "the alarms", alarms, []string{"dynamodb-read-throttles", "dynamodb-write-throttles", "errors", "orchestrator-queue-age", "throttles", "worker-queue-age"})
	return errors.Join(errs...)
}
