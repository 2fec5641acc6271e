package report_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/duradyn/duradyn/bench/report"
)

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestMergeReplacesAndAddsSectionsKeepingTheRest merges, into a full run,
// a result of one of its scenarios and one of a new scenario: the first
// replaces its section in place, the second is appended, and the rest of
// README.md, its header and the other scenario included, is unchanged.
func TestMergeReplacesAndAddsSectionsKeepingTheRest(t *testing.T) {
	dir := t.TempDir()
	if err := report.WriteWithHeader(dir, "Full run.", sampleResults()); err != nil {
		t.Fatal(err)
	}
	before := readFile(t, filepath.Join(dir, "README.md"))
	idleBefore := readFile(t, filepath.Join(dir, "Idle.md"))

	merged := []report.Result{
		{Scenario: "HelloCities5", System: "duradyn/rerun", Activities: 10, Elapsed: time.Second},
		{Scenario: "New one", System: "duradyn/new", Activities: 3, Elapsed: time.Second, Extra: map[string]float64{"x": 1}},
	}
	if err := report.Merge(dir, "Separate run.", merged); err != nil {
		t.Fatal(err)
	}
	after := readFile(t, filepath.Join(dir, "README.md"))

	if !strings.HasPrefix(after, "# Benchmark results\n\nFull run.\n\n## HelloCities5\n\nSeparate run.\n\n| System |") {
		t.Errorf("README.md does not keep its header and replace the first section in place:\n%s", after)
	}
	if strings.Contains(after, "duradyn/memprovider") || !strings.Contains(after, "duradyn/rerun") {
		t.Errorf("HelloCities5's section was not replaced:\n%s", after)
	}
	_, idleSection, _ := strings.Cut(before, "\n## Idle")
	idleSection, _, _ = strings.Cut(idleSection, "\n## ")
	if !strings.Contains(after, "\n## Idle"+idleSection) {
		t.Errorf("Idle's section changed:\n%s", after)
	}
	if got := readFile(t, filepath.Join(dir, "Idle.md")); got != idleBefore {
		t.Errorf("Idle.md changed")
	}
	if !strings.HasSuffix(after, "[![New one chart](New_one.svg)](New_one.svg)\n") || strings.Count(after, "## New one\n\nSeparate run.\n") != 1 {
		t.Errorf("the new scenario's section was not appended once, with the header:\n%s", after)
	}
	if md := readFile(t, filepath.Join(dir, "New_one.md")); !strings.HasPrefix(md, "# New one\n\nSeparate run.\n\n| System |") {
		t.Errorf("New_one.md:\n%s", md)
	}
	if _, err := os.Stat(filepath.Join(dir, "New_one.svg")); err != nil {
		t.Error(err)
	}

	// Merging the same again changes nothing.
	if err := report.Merge(dir, "Separate run.", merged); err != nil {
		t.Fatal(err)
	}
	if again := readFile(t, filepath.Join(dir, "README.md")); again != after {
		t.Errorf("a second merge of the same results changed README.md:\n%s", again)
	}
}

func TestMergeIntoAnEmptyDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "results")
	if err := report.Merge(dir, "", []report.Result{{Scenario: "A", System: "s", Activities: 1, Elapsed: time.Second}}); err != nil {
		t.Fatal(err)
	}
	got := readFile(t, filepath.Join(dir, "README.md"))
	if !strings.HasPrefix(got, "# Benchmark results\n\n## A\n\n| System |") {
		t.Errorf("README.md:\n%s", got)
	}
}
