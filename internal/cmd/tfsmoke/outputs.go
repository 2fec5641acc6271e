package main

import (
	"encoding/json"
	"fmt"
	"strings"
)

// outputs are the outputs of terraform/examples/basic a program needs to
// connect.
type outputs struct {
	TableName            string
	OrchestratorQueueURL string
	WorkerQueueURL       string
	Region               string
}

// parseOutputs reads `terraform output -json`: an object mapping each output
// name to {"value": ..., "type": ..., "sensitive": ...}. Every output of
// [outputs] must be present and a non-empty string.
func parseOutputs(data []byte) (outputs, error) {
	var raw map[string]struct {
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return outputs{}, fmt.Errorf("decode terraform output -json: %w", err)
	}
	var out outputs
	var problems []string
	for _, f := range []struct {
		name string
		dst  *string
	}{
		{"table_name", &out.TableName},
		{"orchestrator_queue_url", &out.OrchestratorQueueURL},
		{"worker_queue_url", &out.WorkerQueueURL},
		{"region", &out.Region},
	} {
		o, ok := raw[f.name]
		if !ok {
			problems = append(problems, f.name+": missing")
			continue
		}
		var s *string
		if err := json.Unmarshal(o.Value, &s); err != nil {
			problems = append(problems, fmt.Sprintf("%s: not a string: %v", f.name, err))
			continue
		}
		if s == nil || *s == "" {
			problems = append(problems, f.name+": empty")
			continue
		}
		*f.dst = *s
	}
	if len(problems) > 0 {
		return outputs{}, fmt.Errorf("terraform outputs: %s", strings.Join(problems, "; "))
	}
	return out, nil
}
