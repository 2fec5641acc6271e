package main

import (
	"strings"
	"testing"

	"github.com/duradyn/duradyn/durable/durabletest"
)

// helloHistory runs Hello("terraform") as instance id in memory and returns
// its history as duroxide JSON lines, as the CLI's history --json prints
// it.
func helloHistory(t *testing.T, id string) string {
	t.Helper()
	reg, err := helloRegistry(nil)
	if err != nil {
		t.Fatal(err)
	}
	env := durabletest.New(t, reg)
	env.Start(hello.Name(), id, "terraform")
	if st := env.Wait(id); st.Output != `"Hello, terraform!"` {
		t.Fatalf("Hello output %q", st.Output)
	}
	return env.HistoryJSON(id)
}

func TestReplayHistory(t *testing.T) {
	history := helloHistory(t, "tf-1")
	var b strings.Builder
	if err := replayHistory([]string{"-instance", "tf-1", "-output", `"Hello, terraform!"`}, strings.NewReader(history), &b); err != nil {
		t.Fatalf("replay of Hello's own history: %v", err)
	}
	if !strings.Contains(b.String(), "replay deterministically") {
		t.Errorf("replay printed %q", b.String())
	}

	lines := strings.Split(strings.TrimSpace(history), "\n")
	for _, tc := range []struct {
		name, in string
		args     []string
		want     string
	}{
		{"no instance", history, nil, "-instance is required"},
		{"empty", "\n", []string{"-instance", "tf-1"}, "empty"},
		{"not JSON lines", "{", []string{"-instance", "tf-1"}, "line 1"},
		{"other instance", history, []string{"-instance", "tf-2"}, `want "tf-2"`},
		{"not completed", strings.Join(lines[:len(lines)-1], "\n"), []string{"-instance", "tf-1"}, "does not end with OrchestrationCompleted"},
		{"other output", history, []string{"-instance", "tf-1", "-output", `"Hello, world!"`}, "want \"Hello, world!\""},
		{"other code", strings.ReplaceAll(history, `"Greet"`, `"Wave"`), []string{"-instance", "tf-1"}, "nondetermin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := replayHistory(tc.args, strings.NewReader(tc.in), &strings.Builder{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("replay error = %v, want one saying %q", err, tc.want)
			}
		})
	}
}

func TestCheckStatus(t *testing.T) {
	const completed = `{
  "instance": "tf-1",
  "status": "Completed",
  "execution_id": 1,
  "output": "\"Hello, terraform!\"",
  "custom_status_version": 0
}
`
	var b strings.Builder
	if err := checkStatus([]string{"-instance", "tf-1", "-output", `"Hello, terraform!"`}, strings.NewReader(completed), &b); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), "tfsmoke status: tf-1 is Completed, output \"Hello, terraform!\"\n"; got != want {
		t.Errorf("status printed %q, want %q", got, want)
	}
	for _, tc := range []struct {
		name, in string
		args     []string
		want     string
	}{
		{"no instance", completed, nil, "-instance is required"},
		{"not JSON", "Completed", []string{"-instance", "tf-1"}, "decode"},
		{"two documents", completed + completed, []string{"-instance", "tf-1"}, "more than one"},
		{"other instance", completed, []string{"-instance", "tf-2"}, `want "tf-2"`},
		{"failed", `{"instance": "tf-1", "status": "Failed", "failure": "boom"}`, []string{"-instance", "tf-1"}, `is "Failed", want Completed`},
		{"other output", completed, []string{"-instance", "tf-1", "-output", `"x"`}, `want "x"`},
		{"no status field", `{"instance": "tf-1", "state": "Completed"}`, []string{"-instance", "tf-1"}, `is "", want Completed`},
		{"no output", `{"instance": "tf-1", "status": "Completed"}`, []string{"-instance", "tf-1", "-output", `"x"`}, "output none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkStatus(tc.args, strings.NewReader(tc.in), &strings.Builder{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("status error = %v, want one saying %q", err, tc.want)
			}
		})
	}
}

func TestRunCommandUsage(t *testing.T) {
	var b strings.Builder
	if err := runCommand("nope", nil, strings.NewReader(""), &b, &b); err == nil || !strings.Contains(err.Error(), "unknown command") {
		t.Errorf("runCommand(nope) = %v", err)
	}
	if err := runCommand("serve", []string{"-endpoint", "http://127.0.0.1:1"}, strings.NewReader(""), &b, &b); err == nil || !strings.Contains(err.Error(), "required") {
		t.Errorf("serve without -outputs = %v, want an error saying what is required", err)
	}
}
