package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestRunSummarisesLeafTests(t *testing.T) {
	input := strings.Join([]string{
		`{"Action":"run","Test":"TestConformance"}`,
		`{"Action":"pass","Test":"TestConformance/Atomicity/A","Elapsed":0.1}`,
		`{"Action":"pass","Test":"TestConformance/Atomicity/B","Elapsed":0.1}`,
		`{"Action":"skip","Test":"TestConformance/LongPolling/ShortPoll","Elapsed":0}`,
		`{"Action":"fail","Test":"TestConformance/Sessions/C","Elapsed":0.2}`,
		`{"Action":"fail","Test":"TestConformance/Sessions","Elapsed":0.2}`,
		`{"Action":"fail","Elapsed":3.5}`,
	}, "\n")
	var out bytes.Buffer
	err := run(strings.NewReader(input), &out)
	if err == nil {
		t.Fatal("a failed test must make run fail")
	}
	got := out.String()
	for _, want := range []string{
		"Atomicity                   2      0      0",
		"Sessions                    0      1      0",
		"skipped: LongPolling/ShortPoll",
		"FAILED:  Sessions/C",
		"wall time: 3.5s",
		"2 passed, 1 failed, 1 skipped",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
}

func TestRunWithoutConformanceTestsFails(t *testing.T) {
	var out bytes.Buffer
	err := run(strings.NewReader("# build failed\n"), &out)
	if err == nil || !strings.Contains(out.String(), "# build failed") {
		t.Fatalf("want an error and the build output echoed, got %v and %q", err, out.String())
	}
}
