package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/duradyn/duradyn/localstack"
)

func TestMain(m *testing.M) { os.Exit(localstack.Main(m)) }

// TestRunPassesEndpointsAndStatus: the command sees the endpoints in its
// environment, and its exit status is run's. The test's own emulator is
// given through the environment, so run starts none.
func TestRunPassesEndpointsAndStatus(t *testing.T) {
	e := localstack.ForTest(t)
	t.Setenv(localstack.EnvDynamoDBEndpoint, e.DynamoDBURL)
	t.Setenv(localstack.EnvSQSEndpoint, e.SQSURL)
	out := filepath.Join(t.TempDir(), "env")
	script := `printf '%s %s' "$` + localstack.EnvDynamoDBEndpoint + `" "$` + localstack.EnvSQSEndpoint + `" > "$1"; exit 3`
	if code := run([]string{"--", "sh", "-c", script, "sh", out}); code != 3 {
		t.Errorf("run returned %d, want the command's 3", code)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if want := e.DynamoDBURL + " " + e.SQSURL; string(got) != want {
		t.Errorf("the command saw endpoints %q, want %q", got, want)
	}
	if code := run([]string{"--", "true"}); code != 0 {
		t.Errorf("run of true returned %d, want 0", code)
	}
	if code := run(nil); code != 2 {
		t.Errorf("run without a command returned %d, want 2 (usage)", code)
	}
}
