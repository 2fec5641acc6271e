package main

import (
	"strings"
	"testing"
)

func TestParseOutputs(t *testing.T) {
	const good = `{
  "orchestrator_queue_url": {"sensitive": false, "type": "string", "value": "http://127.0.0.1:4566/123456789012/t-orchestrator"},
  "region": {"sensitive": false, "type": "string", "value": "us-east-1"},
  "table_name": {"sensitive": false, "type": "string", "value": "t"},
  "worker_queue_url": {"sensitive": false, "type": "string", "value": "http://127.0.0.1:4566/123456789012/t-worker"}
}`
	out, err := parseOutputs([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	want := outputs{
		TableName:            "t",
		OrchestratorQueueURL: "http://127.0.0.1:4566/123456789012/t-orchestrator",
		WorkerQueueURL:       "http://127.0.0.1:4566/123456789012/t-worker",
		Region:               "us-east-1",
	}
	if out != want {
		t.Errorf("parseOutputs = %+v, want %+v", out, want)
	}

	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{"not JSON", `table_name = "t"`, []string{"decode"}},
		{"nothing applied", `{}`, []string{"table_name: missing", "orchestrator_queue_url: missing", "worker_queue_url: missing", "region: missing"}},
		{
			name: "null and wrong types",
			in:   `{"table_name": {"value": null}, "region": {"value": 3}, "orchestrator_queue_url": {"value": ""}, "worker_queue_url": {"value": "u"}}`,
			want: []string{"table_name: empty", "region: not a string", "orchestrator_queue_url: empty"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseOutputs([]byte(tc.in))
			if err == nil {
				t.Fatal("parseOutputs accepted the outputs")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestRunUsage(t *testing.T) {
	var b strings.Builder
	if err := run([]string{"-endpoint", "http://127.0.0.1:1"}, &b); err == nil || !strings.Contains(err.Error(), "required") {
		t.Errorf("run without -outputs = %v, want an error saying what is required", err)
	}
}
