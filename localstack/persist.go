package localstack

import (
	"fmt"
	"os"
	"path/filepath"
)

// resolveDataDir applies the rules of [Options.DynamoDBDataDir] to resolved
// options: the directory is made absolute and created, the LocalStack step
// is skipped, and endpoints from the environment, which would leave the
// directory unused, are refused unless the environment is ignored.
func (o Options) resolveDataDir() (Options, error) {
	if o.DynamoDBDataDir == "" {
		return o, nil
	}
	if !o.IgnoreEnvironment {
		if _, ok, _ := endpointsFromEnv(o.Region); ok {
			return o, fmt.Errorf("localstack: DynamoDBDataDir needs the embedded DynamoDB Local, but the environment names endpoints (%s, AWS_ENDPOINT_URL, ...): unset them or set IgnoreEnvironment", EnvDynamoDBEndpoint)
		}
	}
	dir, err := filepath.Abs(o.DynamoDBDataDir)
	if err != nil {
		return o, fmt.Errorf("localstack: DynamoDBDataDir %s: %w", o.DynamoDBDataDir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return o, fmt.Errorf("localstack: create DynamoDBDataDir: %w", err)
	}
	o.DynamoDBDataDir = dir
	o.DisableLocalStack = true
	return o, nil
}

// dynamoDBStorageArgs returns DynamoDB Local's storage flags: in memory, or
// in a database file (shared by every region and credential, as -sharedDb
// makes it) in o.DynamoDBDataDir.
func dynamoDBStorageArgs(o Options) []string {
	if o.DynamoDBDataDir == "" {
		return []string{"-inMemory"}
	}
	return []string{"-dbPath", o.DynamoDBDataDir}
}
