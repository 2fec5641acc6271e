package report_test

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/duradyn/duradyn/bench/report"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// sampleResults has two scenarios, interleaved, to check grouping and
// order; systems with and without DynamoDB, SQS, a peer, latencies and
// Extra figures; a row that did not run; and text that needs escaping.
func sampleResults() []report.Result {
	ms := time.Millisecond
	return []report.Result{
		{
			Scenario:   "HelloCities5",
			System:     "duradyn/memprovider",
			Activities: 5000,
			Elapsed:    1250 * ms,
			Latencies:  []time.Duration{12 * ms, 9 * ms, 30 * ms, 11 * ms},
			Notes:      "fault-free",
		},
		{
			Scenario: "Idle",
			System:   "duradyn/dynamodb-local+sqs",
			Elapsed:  time.Minute,
			DynamoDB: map[string]int{"Query": 4},
			SQS:      map[string]int{"ReceiveMessage": 6},
			Dollars:  0.0000048,
			Extra:    map[string]float64{"requests/minute": 10, "$/month": 0.2074},
		},
		{
			Scenario:           "HelloCities5",
			System:             "duradyn/dynamodb-local+sqs",
			Activities:         5000,
			Elapsed:            9876 * ms,
			Latencies:          []time.Duration{80 * ms, 95 * ms, 120 * ms, 410 * ms},
			DynamoDB:           map[string]int{"GetItem": 5000, "TransactWriteItems": 10000, "Query": 2500},
			WRU:                41234.5,
			RRU:                7500,
			SQS:                map[string]int{"SendMessage": 1000, "ReceiveMessage": 1200},
			Dollars:            0.0289,
			ProvisionedDollars: 0.0123,
			Notes:              "proxy | 4 ms one way <each>",
		},
		{
			Scenario:     "HelloCities5",
			System:       "go-workflows/redis",
			Activities:   5000,
			Elapsed:      4321 * ms,
			PeerCommands: 123456,
		},
		{
			Scenario: "HelloCities5",
			System:   "go-workflows/sqlite-file",
			Notes:    "not run: no cgo",
		},
		{
			Scenario: "Idle",
			System:   "go-workflows/redis",
			Elapsed:  time.Minute,
			Extra:    map[string]float64{"requests/minute": 1234.5},
		},
	}
}

func TestWriteMatchesGoldenFiles(t *testing.T) {
	dir := t.TempDir()
	header := "Run on 2026-01-02 by `make bench-e2e`; machine: test, 2 cores."
	if err := report.WriteWithHeader(dir, header, sampleResults()); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "golden")
	if *update {
		if err := os.RemoveAll(golden); err != nil {
			t.Fatal(err)
		}
		if err := os.CopyFS(golden, os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
	}
	got, want := fileNames(t, dir), fileNames(t, golden)
	if !slices.Equal(got, want) {
		t.Fatalf("files = %v, want %v", got, want)
	}
	for _, name := range want {
		gotText, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		wantText, err := os.ReadFile(filepath.Join(golden, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(gotText, wantText) {
			t.Errorf("%s differs from its golden file (run go test -update to accept):\n--- got\n%s\n--- want\n%s", name, gotText, wantText)
		}
	}
}

func fileNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestWriteIsDeterministic(t *testing.T) {
	first, second := t.TempDir(), t.TempDir()
	if err := report.Write(first, sampleResults()); err != nil {
		t.Fatal(err)
	}
	// Map iteration order differs from run to run; rebuilding the input
	// makes new maps.
	if err := report.Write(second, sampleResults()); err != nil {
		t.Fatal(err)
	}
	for _, name := range fileNames(t, first) {
		a, _ := os.ReadFile(filepath.Join(first, name))
		b, err := os.ReadFile(filepath.Join(second, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two writes of the same results", name)
		}
	}
}

func TestWriteWithoutHeaderStartsWithTitleAndScenario(t *testing.T) {
	dir := t.TempDir()
	if err := report.Write(dir, sampleResults()[:1]); err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "# Benchmark results\n\n## HelloCities5\n"; !strings.HasPrefix(string(readme), want) {
		t.Errorf("README.md starts %q, want %q", readme[:min(len(readme), 60)], want)
	}
}

func TestPercentileIsNearestRank(t *testing.T) {
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(100-i) * time.Millisecond // 100 ms … 1 ms, unsorted
	}
	cases := []struct {
		name      string
		latencies []time.Duration
		p         float64
		want      time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one sample", []time.Duration{7}, 99, 7},
		{"p50 of 4 is rank 2", []time.Duration{40, 10, 30, 20}, 50, 20},
		{"p50 of 5 is rank 3", []time.Duration{50, 10, 40, 20, 30}, 50, 30},
		{"p99 of 4 is the largest", []time.Duration{40, 10, 30, 20}, 99, 40},
		{"p99 of 100 is rank 99", hundred, 99, 99 * time.Millisecond},
		{"p50 of 100 is rank 50", hundred, 50, 50 * time.Millisecond},
		{"p100 is the largest", hundred, 100, 100 * time.Millisecond},
		{"p0 is the smallest", hundred, 0, time.Millisecond},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := slices.Clone(c.latencies)
			if got := report.Percentile(c.latencies, c.p); got != c.want {
				t.Errorf("Percentile(p%v) = %v, want %v", c.p, got, c.want)
			}
			if !slices.Equal(before, c.latencies) {
				t.Error("Percentile modified its input")
			}
		})
	}
}

func TestColumnsEmptyInEveryRowAreOmitted(t *testing.T) {
	dir := t.TempDir()
	results := []report.Result{
		{Scenario: "Plain", System: "a", Activities: 10, Elapsed: time.Second},
		{Scenario: "Plain", System: "b", Activities: 20, Elapsed: 2 * time.Second},
	}
	if err := report.Write(dir, results); err != nil {
		t.Fatal(err)
	}
	table, err := os.ReadFile(filepath.Join(dir, "Plain.md"))
	if err != nil {
		t.Fatal(err)
	}
	header := tableHeader(t, string(table))
	if want := "| System | Activities | Elapsed | Activities/s |"; header != want {
		t.Errorf("header = %q, want %q", header, want)
	}
}

func TestColumnsPresentInAnyRowAreKept(t *testing.T) {
	dir := t.TempDir()
	results := []report.Result{
		{Scenario: "Mixed", System: "memory", Activities: 10, Elapsed: time.Second},
		{Scenario: "Mixed", System: "dynamodb", Activities: 10, Elapsed: time.Second,
			DynamoDB: map[string]int{"GetItem": 20}, WRU: 0, RRU: 5},
		{Scenario: "Mixed", System: "peer", Activities: 10, Elapsed: time.Second,
			PeerCommands: 30, Extra: map[string]float64{"z": 1, "a": 2}, Notes: "n"},
	}
	if err := report.Write(dir, results); err != nil {
		t.Fatal(err)
	}
	table, err := os.ReadFile(filepath.Join(dir, "Mixed.md"))
	if err != nil {
		t.Fatal(err)
	}
	header := tableHeader(t, string(table))
	want := "| System | Activities | Elapsed | Activities/s | DynamoDB requests/activity | DynamoDB requests/activity by operation | WRU/activity | RRU/activity | Peer commands/activity | a | z | Notes |"
	if header != want {
		t.Errorf("header = %q, want %q", header, want)
	}
	// WRU is 0 for a system with DynamoDB: a figure, not a missing one.
	if !strings.Contains(string(table), "| dynamodb | 10 | 1 s | 10 | 2 | GetItem 2 | 0 | 0.5 |  |  |  |  |") {
		t.Errorf("dynamodb row not as expected in\n%s", table)
	}
}

func TestRequestsByOperationAreInNameOrderWithoutUnusedOnes(t *testing.T) {
	dir := t.TempDir()
	results := []report.Result{{Scenario: "Ops", System: "dynamodb", Activities: 4, Elapsed: time.Second,
		DynamoDB: map[string]int{"UpdateItem": 2, "Query": 10, "GetItem": 0, "TransactWriteItems": 8}}}
	if err := report.Write(dir, results); err != nil {
		t.Fatal(err)
	}
	table, err := os.ReadFile(filepath.Join(dir, "Ops.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "| 5 | Query 2.5, TransactWriteItems 2, UpdateItem 0.5 |"; !strings.Contains(string(table), want) {
		t.Errorf("no %q in\n%s", want, table)
	}
}

func TestWritesByItemAreLargestFirstWithoutSmallOnes(t *testing.T) {
	dir := t.TempDir()
	results := []report.Result{{Scenario: "Items", System: "dynamodb", Activities: 4, Elapsed: time.Second,
		DynamoDB: map[string]int{"Query": 4}, WRU: 30.01,
		WRUByItem: map[string]float64{"history": 8, "slot": 12, "slot in ready": 4, "lock": 6, "counter": 0.01}}}
	if err := report.Write(dir, results); err != nil {
		t.Fatal(err)
	}
	table, err := os.ReadFile(filepath.Join(dir, "Items.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "| 7.5 | slot 3, history 2, lock 1.5, slot in ready 1 |"; !strings.Contains(string(table), want) {
		t.Errorf("no %q in\n%s", want, table)
	}
}

func tableHeader(t *testing.T, markdown string) string {
	t.Helper()
	for line := range strings.Lines(markdown) {
		if strings.HasPrefix(line, "| System") {
			return strings.TrimRight(line, "\n")
		}
	}
	t.Fatalf("no table header in\n%s", markdown)
	return ""
}

func TestNumbersAreReadable(t *testing.T) {
	results := []report.Result{{
		Scenario: "Numbers", System: "s", Activities: 1234567, Elapsed: 1500 * time.Millisecond,
		Extra: map[string]float64{"big": 9876543.21, "small": 0.012345, "mid": 12.345, "whole": 3},
	}}
	dir := t.TempDir()
	if err := report.Write(dir, results); err != nil {
		t.Fatal(err)
	}
	table, err := os.ReadFile(filepath.Join(dir, "Numbers.md"))
	if err != nil {
		t.Fatal(err)
	}
	// Activities, elapsed, activities/s, big, mid, small, whole.
	if want := "| s | 1,234,567 | 1.5 s | 823,045 | 9,876,543 | 12.3 | 0.0123 | 3 |"; !strings.Contains(string(table), want) {
		t.Errorf("table lacks row %q:\n%s", want, table)
	}
}

func TestChartIsWellFormedSVG(t *testing.T) {
	dir := t.TempDir()
	if err := report.Write(dir, sampleResults()); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"HelloCities5.svg", "Idle.svg"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		texts := parseSVG(t, name, data)
		for _, want := range []string{"duradyn/memprovider", "4,000", "no figure"} {
			if name == "HelloCities5.svg" && !slices.Contains(texts, want) {
				t.Errorf("%s: no text %q among %q", name, want, texts)
			}
		}
		// Idle has no activities: the chart shows its first Extra figure.
		if name == "Idle.svg" && (!slices.Contains(texts, "$/month") || !slices.Contains(texts, "0.207")) {
			t.Errorf("%s: want the $/month figure, got texts %q", name, texts)
		}
	}
}

// parseSVG checks that data is well-formed XML with an svg root element in
// the SVG namespace and returns the character data of its text elements.
func parseSVG(t *testing.T, name string, data []byte) []string {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(data))
	var texts []string
	var inText bool
	root := true
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s is not well-formed XML: %v", name, err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if root && (tok.Name.Local != "svg" || tok.Name.Space != "http://www.w3.org/2000/svg") {
				t.Fatalf("%s: root element %v, want svg in the SVG namespace", name, tok.Name)
			}
			root = false
			inText = tok.Name.Local == "text"
		case xml.CharData:
			if inText {
				texts = append(texts, string(tok))
			}
		case xml.EndElement:
			inText = false
		}
	}
	return texts
}

func TestWriteRejectsResultWithoutScenario(t *testing.T) {
	err := report.Write(t.TempDir(), []report.Result{{System: "s"}})
	if !errors.Is(err, report.ErrNoScenario) {
		t.Errorf("Write = %v, want ErrNoScenario", err)
	}
}

func TestWriteRejectsScenariosSharingAFileName(t *testing.T) {
	dir := t.TempDir()
	err := report.Write(dir, []report.Result{{Scenario: "a b", System: "s"}, {Scenario: "a/b", System: "s"}})
	if !errors.Is(err, report.ErrFileNameClash) {
		t.Errorf("Write = %v, want ErrFileNameClash", err)
	}
	if names := fileNames(t, dir); len(names) != 0 {
		t.Errorf("Write left files %v, want none", names)
	}
}

// TestCPUIsMillisecondsPerActivity: a result's CPU time shows as
// milliseconds per activity, beside a system's that has none measured.
func TestCPUIsMillisecondsPerActivity(t *testing.T) {
	dir := t.TempDir()
	results := []report.Result{
		{Scenario: "CPU", System: "a", Activities: 100, Elapsed: time.Second, CPU: 250 * time.Millisecond},
		{Scenario: "CPU", System: "b", Activities: 10, Elapsed: time.Second},
	}
	if err := report.Write(dir, results); err != nil {
		t.Fatal(err)
	}
	table, err := os.ReadFile(filepath.Join(dir, "CPU.md"))
	if err != nil {
		t.Fatal(err)
	}
	if header, want := tableHeader(t, string(table)), "| System | Activities | Elapsed | Activities/s | CPU ms/activity |"; header != want {
		t.Errorf("header = %q, want %q", header, want)
	}
	for _, row := range []string{"| a | 100 | 1 s | 100 | 2.5 |", "| b | 10 | 1 s | 10 |  |"} {
		if !strings.Contains(string(table), row) {
			t.Errorf("row %q not in\n%s", row, table)
		}
	}
	if cpu := report.ProcessCPU(); cpu <= 0 {
		t.Errorf("ProcessCPU() = %v, want > 0 for a running process", cpu)
	}
}
