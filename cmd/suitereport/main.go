// Command suitereport reads `go test -json` output on standard input and
// prints a per-category summary of a conformance run: tests passed, failed
// and skipped in each category, the names of failures and skips, and the
// totals. It exits non-zero when any test failed or when the input holds no
// conformance test.
//
// Usage:
//
//	go test -json -run '^TestConformance$' ./provider/memprovider/ | go run ./cmd/suitereport
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "suitereport:", err)
		os.Exit(1)
	}
}

// testEvent is the part of a `go test -json` record this command reads.
type testEvent struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// tally counts the outcomes of one category.
type tally struct {
	passed, failed, skipped int
	failures, skips         []string
}

func run(in io.Reader, out io.Writer) error {
	byCategory := map[string]*tally{}
	var order []string
	var elapsed time.Duration
	var buildErrors []string
	scanner := bufio.NewScanner(in)
	scanner.Buffer(make([]byte, 1<<20), 16<<20)
	for scanner.Scan() {
		var ev testEvent
		if err := json.Unmarshal(scanner.Bytes(), &ev); err != nil {
			// go test prints build failures as plain text.
			buildErrors = append(buildErrors, scanner.Text())
			continue
		}
		parts := strings.Split(ev.Test, "/")
		if ev.Test == "" && (ev.Action == "pass" || ev.Action == "fail") {
			elapsed = time.Duration(ev.Elapsed * float64(time.Second))
		}
		if len(parts) != 3 || !strings.HasPrefix(parts[0], "TestConformance") {
			continue // only leaf tests: TestConformance/<Category>/<Test>
		}
		cat, name := parts[1], parts[2]
		t := byCategory[cat]
		if t == nil {
			t = &tally{}
			byCategory[cat] = t
			order = append(order, cat)
		}
		switch ev.Action {
		case "pass":
			t.passed++
		case "fail":
			t.failed++
			t.failures = append(t.failures, name)
		case "skip":
			t.skipped++
			t.skips = append(t.skips, name)
		}
	}
	if err := scanner.Err(); err != nil {
		return err
	}
	if len(order) == 0 {
		for _, line := range buildErrors {
			fmt.Fprintln(out, line)
		}
		return errors.New("no conformance test ran")
	}
	slices.Sort(order)

	var total tally
	fmt.Fprintf(out, "%-22s %6s %6s %6s\n", "category", "passed", "failed", "skipped")
	for _, cat := range order {
		t := byCategory[cat]
		fmt.Fprintf(out, "%-22s %6d %6d %6d\n", cat, t.passed, t.failed, t.skipped)
		total.passed += t.passed
		total.failed += t.failed
		total.skipped += t.skipped
	}
	fmt.Fprintf(out, "%-22s %6d %6d %6d\n", "total", total.passed, total.failed, total.skipped)
	for _, cat := range order {
		for _, name := range byCategory[cat].skips {
			fmt.Fprintf(out, "skipped: %s/%s\n", cat, name)
		}
		for _, name := range byCategory[cat].failures {
			fmt.Fprintf(out, "FAILED:  %s/%s\n", cat, name)
		}
	}
	if elapsed > 0 {
		fmt.Fprintf(out, "wall time: %s\n", elapsed.Round(100*time.Millisecond))
	}
	fmt.Fprintf(out, "%d passed, %d failed, %d skipped\n", total.passed, total.failed, total.skipped)
	if total.failed > 0 {
		return fmt.Errorf("%d conformance tests failed", total.failed)
	}
	return nil
}
