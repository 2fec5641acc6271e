package main

import (
	"bytes"
	"strings"
	"testing"
)

// summarise runs the command on events and returns its output and error.
func summarise(t *testing.T, events ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := run(strings.NewReader(strings.Join(events, "\n")), &out)
	return out.String(), err
}

// wantLines fails t unless got contains every string of want.
func wantLines(t *testing.T, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("summary lacks %q:\n%s", w, got)
		}
	}
}

func TestRunSummarisesLeafTests(t *testing.T) {
	got, err := summarise(t,
		`{"Action":"run","Test":"TestConformance"}`,
		`{"Action":"pass","Test":"TestConformance/Atomicity/A","Elapsed":0.1}`,
		`{"Action":"pass","Test":"TestConformance/Atomicity/B","Elapsed":0.1}`,
		`{"Action":"pass","Test":"TestConformance/Atomicity","Elapsed":0.1}`,
		`{"Action":"skip","Test":"TestConformance/LongPolling/ShortPoll","Elapsed":0}`,
		`{"Action":"fail","Test":"TestConformance/Sessions/C","Elapsed":0.2}`,
		`{"Action":"fail","Test":"TestConformance/Sessions","Elapsed":0.2}`,
		`{"Action":"fail","Elapsed":3.5}`,
	)
	if err == nil {
		t.Fatal("a failed test must make run fail")
	}
	wantLines(t, got,
		"category               passed failed skipped\n",
		"Atomicity                   2      0      0",
		"Sessions                    0      1      0",
		"total                       2      1      1",
		"skipped: LongPolling/ShortPoll",
		"FAILED:  Sessions/C",
		"wall time: 3.5s",
		"2 passed, 1 failed, 1 skipped",
	)
	if strings.Contains(got, "configurations") {
		t.Errorf("one configuration needs no grand total:\n%s", got)
	}
}

func TestRunWithoutConformanceTestsFails(t *testing.T) {
	got, err := summarise(t, "# build failed")
	if err == nil || !strings.Contains(got, "# build failed") {
		t.Fatalf("want an error and the build output echoed, got %v and %q", err, got)
	}
}

func TestRunEchoesBuildOutputEvents(t *testing.T) {
	got, err := summarise(t,
		`{"ImportPath":"example.com/x","Action":"build-output","Output":"x.go:3:1: syntax error\n"}`,
		`{"ImportPath":"example.com/x","Action":"build-fail"}`,
		`{"Action":"fail","Package":"example.com/x","Elapsed":0,"FailedBuild":"example.com/x"}`,
	)
	if err == nil || !strings.Contains(got, "x.go:3:1: syntax error") {
		t.Fatalf("want an error and the compiler's message, got %v and %q", err, got)
	}
}

// TestRunSummarisesConfigurations reads the validation run's shape:
// TestValidation/<Configuration>/<Category>/<Test>, one table each.
func TestRunSummarisesConfigurations(t *testing.T) {
	got, err := summarise(t,
		`{"Action":"run","Package":"p","Test":"TestValidation"}`,
		`{"Action":"run","Package":"p","Test":"TestValidation/LongPoll"}`,
		`{"Action":"run","Package":"p","Test":"TestValidation/LongPoll/Atomicity"}`,
		`{"Action":"pass","Package":"p","Test":"TestValidation/LongPoll/Atomicity/A","Elapsed":0.1}`,
		`{"Action":"pass","Package":"p","Test":"TestValidation/LongPoll/Atomicity/B","Elapsed":0.1}`,
		`{"Action":"pass","Package":"p","Test":"TestValidation/LongPoll/Sessions/S","Elapsed":0.1}`,
		`{"Action":"pass","Package":"p","Test":"TestValidation/LongPoll/Atomicity","Elapsed":0.3}`,
		`{"Action":"pass","Package":"p","Test":"TestValidation/LongPoll/Sessions","Elapsed":0.3}`,
		`{"Action":"pass","Package":"p","Test":"TestValidation/LongPoll","Elapsed":31.24}`,
		`{"Time":"2026-01-02T10:00:31.5Z","Action":"run","Package":"p","Test":"TestValidation/ShortPoll"}`,
		`{"Action":"pass","Package":"p","Test":"TestValidation/ShortPoll/Atomicity/A","Elapsed":0.1}`,
		`{"Action":"pass","Package":"p","Test":"TestValidation/ShortPoll/Atomicity/B","Elapsed":0.1}`,
		`{"Action":"output","Package":"p","Test":"TestValidation/ShortPoll/LongPolling/Waits","Output":"=== RUN   TestValidation/ShortPoll/LongPolling/Waits\n"}`,
		`{"Action":"output","Package":"p","Test":"TestValidation/ShortPoll/LongPolling/Waits","Output":"    long_polling.go:20: provider does not long-poll\n"}`,
		`{"Action":"output","Package":"p","Test":"TestValidation/ShortPoll/LongPolling/Waits","Output":"--- SKIP: TestValidation/ShortPoll/LongPolling/Waits (0.00s)\n"}`,
		`{"Action":"skip","Package":"p","Test":"TestValidation/ShortPoll/LongPolling/Waits","Elapsed":0}`,
		`{"Action":"pass","Package":"p","Test":"TestValidation/ShortPoll/Sessions/S","Elapsed":0.1}`,
		`{"Time":"2026-01-02T10:01:01.44Z","Action":"pass","Package":"p","Test":"TestValidation/ShortPoll","Elapsed":0}`,
		`{"Action":"pass","Package":"p","Test":"TestValidation","Elapsed":61.2}`,
		`{"Action":"pass","Package":"p","Elapsed":62.0}`,
	)
	if err != nil {
		t.Fatalf("a run without failures must succeed: %v\n%s", err, got)
	}
	wantLines(t, got,
		"LongPoll (31.2s)\n  category               passed failed skipped\n",
		"  Atomicity                   2      0      0\n  Sessions                    1      0      0\n  total                       3      0      0\n",
		"ShortPoll (29.9s)\n",
		"  LongPolling                 0      0      1\n",
		"  total                       3      0      1\n",
		"all 2 configurations          6      0      1\n",
		"skipped: ShortPoll/LongPolling/Waits: provider does not long-poll\n",
		"wall time: 1m2s\n",
		"6 passed, 0 failed, 1 skipped\n",
	)
	if strings.Index(got, "LongPoll (") > strings.Index(got, "ShortPoll (") {
		t.Errorf("configurations must be listed in the order they ran:\n%s", got)
	}
}

func TestRunShowsFailureOutput(t *testing.T) {
	got, err := summarise(t,
		`{"Action":"output","Package":"p","Test":"TestValidation/LongPoll/Sessions/C","Output":"=== RUN   TestValidation/LongPoll/Sessions/C\n"}`,
		`{"Action":"output","Package":"p","Test":"TestValidation/LongPoll/Sessions/C","Output":"    sessions.go:40: FetchWorkItem: want an item, got none\n"}`,
		`{"Action":"output","Package":"p","Test":"TestValidation/LongPoll/Sessions/C","Output":"--- FAIL: TestValidation/LongPoll/Sessions/C (0.20s)\n"}`,
		`{"Action":"fail","Package":"p","Test":"TestValidation/LongPoll/Sessions/C","Elapsed":0.2}`,
		`{"Action":"pass","Package":"p","Test":"TestValidation/ShortPoll/Sessions/C","Elapsed":0.2}`,
		`{"Action":"fail","Package":"p","Elapsed":3}`,
	)
	if err == nil {
		t.Fatal("a failed test must make run fail")
	}
	wantLines(t, got,
		"FAILED:  LongPoll/Sessions/C\n    sessions.go:40: FetchWorkItem: want an item, got none\n",
		"1 passed, 1 failed, 0 skipped",
	)
	if strings.Contains(got, "--- FAIL") || strings.Contains(got, "=== RUN") {
		t.Errorf("the runner's own lines belong to no summary:\n%s", got)
	}
}

// TestRunCountsUnfinishedTests reads a run that timed out: tests that
// started and never reported fail it, and the package's panic is shown.
func TestRunCountsUnfinishedTests(t *testing.T) {
	got, err := summarise(t,
		`{"Action":"run","Package":"p","Test":"TestConformance/Atomicity/A"}`,
		`{"Action":"pass","Package":"p","Test":"TestConformance/Atomicity/A","Elapsed":0.1}`,
		`{"Action":"run","Package":"p","Test":"TestConformance/Atomicity/Slow"}`,
		`{"Action":"output","Package":"p","Output":"panic: test timed out after 20m0s\n"}`,
		`{"Action":"fail","Package":"p","Elapsed":1200}`,
	)
	if err == nil {
		t.Fatal("an unfinished test must make run fail")
	}
	wantLines(t, got,
		"Atomicity                   1      1      0",
		"FAILED:  Atomicity/Slow (did not finish)",
		"1 passed, 1 failed, 0 skipped",
	)
}

// TestRunReportsPackageFailure reads a run whose tests passed but whose
// package failed afterwards (in TestMain): the run fails and says why.
func TestRunReportsPackageFailure(t *testing.T) {
	got, err := summarise(t,
		`{"Action":"pass","Package":"p","Test":"TestConformance/Atomicity/A","Elapsed":0.1}`,
		`{"Action":"output","Package":"p","Output":"emulator: stop: process did not exit\n"}`,
		`{"Action":"fail","Package":"p","Elapsed":2}`,
	)
	if err == nil {
		t.Fatal("a failed package must make run fail")
	}
	wantLines(t, got,
		"FAILED:  package p\n    emulator: stop: process did not exit\n",
		"1 passed, 0 failed, 0 skipped",
	)
}

func TestGroupTitles(t *testing.T) {
	for _, tc := range []struct {
		prefixes []string
		want     map[string]string
	}{
		{[]string{"TestConformance"}, map[string]string{"TestConformance": ""}},
		{[]string{"TestValidation/LongPoll"}, map[string]string{"TestValidation/LongPoll": "LongPoll"}},
		{[]string{"TestValidation/LongPoll", "TestValidation/ShortPoll"},
			map[string]string{"TestValidation/LongPoll": "LongPoll", "TestValidation/ShortPoll": "ShortPoll"}},
		{[]string{"TestA/X", "TestB/X"}, map[string]string{"TestA/X": "TestA/X", "TestB/X": "TestB/X"}},
		{[]string{"TestConformance", "TestValidation/LongPoll"},
			map[string]string{"TestConformance": "TestConformance", "TestValidation/LongPoll": "TestValidation/LongPoll"}},
	} {
		got := groupTitles(tc.prefixes)
		for p, want := range tc.want {
			if got[p] != want {
				t.Errorf("groupTitles(%q)[%q] = %q, want %q", tc.prefixes, p, got[p], want)
			}
		}
	}
}
