// Command suitereport reads `go test -json` output on standard input and
// prints a summary of a conformance run: for each configuration the suite
// ran in, a table of the tests passed, failed and skipped per category and
// their totals; then the skipped tests with the reason they give, the
// failed tests with their output, and the totals of the whole run. It exits
// non-zero when a test failed or did not finish, when a package failed
// outside its tests, or when the input holds no conformance test.
//
// A conformance test is a leaf subtest at least three levels deep: the
// last two levels are its category and name, the levels between the
// top-level test and the category name its configuration. Both shapes in
// use are understood:
//
//	TestConformance/<Category>/<Test>              one configuration
//	TestValidation/<Configuration>/<Category>/<Test>  one table per configuration
//
// Usage:
//
//	go test -json -run '^TestConformance$' ./provider/memprovider/ | go run ./internal/cmd/suitereport
//	go test -json -run '^TestValidation$' . | go run ./internal/cmd/suitereport
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
	Time    time.Time
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// testKey identifies one test of one package.
type testKey struct{ pkg, name string }

// testResult is what the input says about one test.
type testResult struct {
	// action is pass, fail or skip; "" while the test has not finished.
	action string
	// elapsed is the test's time from its first event to its result: go
	// test reports 0 for a test whose subtests all run in parallel.
	elapsed time.Duration
	started time.Time
	// output holds the test's own lines (not the runner's === and ---
	// lines), up to maxOutputLines, until it passes.
	output []string
}

// Limits on what is kept and printed of output.
const (
	maxOutputLines  = 200
	maxFailureLines = 30
	maxPackageLines = 20
)

// tally counts the outcomes of one category, one configuration or the run.
type tally struct {
	passed, failed, skipped int
}

func (t *tally) add(o tally) {
	t.passed += o.passed
	t.failed += o.failed
	t.skipped += o.skipped
}

// group is one configuration of the suite: its categories' tallies.
type group struct {
	prefix     string
	categories map[string]*tally
	elapsed    time.Duration
}

// input is everything read from a `go test -json` stream.
type input struct {
	tests    map[testKey]*testResult
	order    []testKey
	parents  map[testKey]bool
	elapsed  time.Duration
	failed   []string            // packages that failed
	pkgLines map[string][]string // package-level output, last lines
	plain    []string            // lines that are not test events
}

func read(in io.Reader) (*input, error) {
	r := &input{tests: map[testKey]*testResult{}, parents: map[testKey]bool{}, pkgLines: map[string][]string{}}
	scanner := bufio.NewScanner(in)
	scanner.Buffer(make([]byte, 1<<20), 16<<20)
	for scanner.Scan() {
		var ev testEvent
		if err := json.Unmarshal(scanner.Bytes(), &ev); err != nil || ev.Action == "" {
			// go test prints some build failures as plain text.
			r.plain = append(r.plain, scanner.Text())
			continue
		}
		elapsed := time.Duration(ev.Elapsed * float64(time.Second))
		if ev.Test == "" {
			switch ev.Action {
			case "build-output":
				r.plain = append(r.plain, strings.TrimRight(ev.Output, "\n"))
			case "output":
				lines := append(r.pkgLines[ev.Package], strings.TrimRight(ev.Output, "\n"))
				r.pkgLines[ev.Package] = lines[max(0, len(lines)-maxPackageLines):]
			case "pass", "fail":
				r.elapsed = max(r.elapsed, elapsed)
				if ev.Action == "fail" {
					r.failed = append(r.failed, ev.Package)
				}
			}
			continue
		}
		k := testKey{ev.Package, ev.Test}
		t := r.tests[k]
		if t == nil {
			t = &testResult{started: ev.Time}
			r.tests[k] = t
			r.order = append(r.order, k)
			for i := strings.LastIndexByte(ev.Test, '/'); i > 0; i = strings.LastIndexByte(ev.Test[:i], '/') {
				r.parents[testKey{ev.Package, ev.Test[:i]}] = true
			}
		}
		switch ev.Action {
		case "output":
			line := strings.TrimRight(ev.Output, "\n")
			trimmed := strings.TrimSpace(line)
			if trimmed != "" && !strings.HasPrefix(trimmed, "=== ") && !strings.HasPrefix(trimmed, "--- ") && len(t.output) < maxOutputLines {
				t.output = append(t.output, line)
			}
		case "pass", "fail", "skip":
			t.action, t.elapsed = ev.Action, elapsed
			if !t.started.IsZero() && ev.Time.Sub(t.started) > elapsed {
				t.elapsed = ev.Time.Sub(t.started)
			}
			if ev.Action == "pass" {
				t.output = nil
			}
		}
	}
	if err := scanner.Err(); err != nil {
		return nil, fmt.Errorf("read test events: %w", err)
	}
	return r, nil
}

// leaf is one conformance test.
type leaf struct {
	prefix, category, name string
	result                 *testResult
}

// leaves returns the conformance tests of r in input order.
func (r *input) leaves() []leaf {
	var out []leaf
	for _, k := range r.order {
		if r.parents[k] {
			continue
		}
		parts := strings.Split(k.name, "/")
		if len(parts) < 3 {
			continue // a top-level test or a category without tests
		}
		out = append(out, leaf{
			prefix:   strings.Join(parts[:len(parts)-2], "/"),
			category: parts[len(parts)-2],
			name:     parts[len(parts)-1],
			result:   r.tests[k],
		})
	}
	return out
}

// elapsedOf returns the elapsed time of the test named prefix in any
// package.
func (r *input) elapsedOf(prefix string) time.Duration {
	for k, t := range r.tests {
		if k.name == prefix {
			return t.elapsed
		}
	}
	return 0
}

// run reads the `go test -json` stream in and prints its summary to out,
// returning an error when the run failed or held no conformance test.
func run(in io.Reader, out io.Writer) error {
	r, err := read(in)
	if err != nil {
		return err
	}
	leaves := r.leaves()
	if len(leaves) == 0 {
		printUnrecognised(out, r)
		return errors.New("no conformance test ran")
	}
	groups, order := r.tallyGroups(leaves)
	titles := groupTitles(order)
	total := printTables(out, groups, order, titles)

	if total.skipped+total.failed > 0 || len(r.failed) > 0 {
		fmt.Fprintln(out)
	}
	printSkipped(out, titles, leaves)
	printFailed(out, titles, leaves)
	// A package can fail outside its tests: a timeout, a panic, TestMain.
	var pkgErr error
	if total.failed == 0 && len(r.failed) > 0 {
		printPackageFailures(out, r)
		pkgErr = fmt.Errorf("%d package(s) failed outside the conformance tests", len(r.failed))
	}
	if r.elapsed > 0 {
		fmt.Fprintf(out, "wall time: %s\n", r.elapsed.Round(100*time.Millisecond))
	}
	fmt.Fprintf(out, "%d passed, %d failed, %d skipped\n", total.passed, total.failed, total.skipped)
	if total.failed > 0 {
		return fmt.Errorf("%d conformance tests failed", total.failed)
	}
	return pkgErr
}

// printUnrecognised prints, when no conformance test ran, what the input
// held instead (plain lines such as build failures, and the output of
// failed packages) so that the reason is not lost behind the summary's
// error.
func printUnrecognised(out io.Writer, r *input) {
	for _, line := range r.plain {
		fmt.Fprintln(out, line)
	}
	for _, pkg := range r.failed {
		for _, line := range r.pkgLines[pkg] {
			fmt.Fprintln(out, line)
		}
	}
}

// tallyGroups counts the outcomes of leaves per configuration and category,
// and returns the configurations with their prefixes in input order: the
// tables are printed from these counts.
func (r *input) tallyGroups(leaves []leaf) (map[string]*group, []string) {
	groups := map[string]*group{}
	var order []string
	for _, l := range leaves {
		g := groups[l.prefix]
		if g == nil {
			g = &group{prefix: l.prefix, categories: map[string]*tally{}, elapsed: r.elapsedOf(l.prefix)}
			groups[l.prefix] = g
			order = append(order, l.prefix)
		}
		c := g.categories[l.category]
		if c == nil {
			c = &tally{}
			g.categories[l.category] = c
		}
		switch l.result.action {
		case "pass":
			c.passed++
		case "skip":
			c.skipped++
		default: // failed, or did not finish
			c.failed++
		}
	}
	return groups, order
}

// printTables prints one table per configuration, in order, and the line
// of run totals when there are several; it returns the run's totals, which
// decide the rest of the summary and the exit status.
func printTables(out io.Writer, groups map[string]*group, order []string, titles map[string]string) tally {
	var total tally
	for i, prefix := range order {
		g := groups[prefix]
		indent := ""
		if titles[prefix] != "" {
			if i > 0 {
				fmt.Fprintln(out)
			}
			heading := titles[prefix]
			if g.elapsed > 0 {
				heading += fmt.Sprintf(" (%s)", g.elapsed.Round(100*time.Millisecond))
			}
			fmt.Fprintln(out, heading)
			indent = "  "
		}
		total.add(printGroupTable(out, g, indent))
	}
	if len(order) > 1 {
		fmt.Fprintln(out)
		fmt.Fprintf(out, "%-24s %6d %6d %6d\n", fmt.Sprintf("all %d configurations", len(order)), total.passed, total.failed, total.skipped)
	}
	return total
}

// printGroupTable prints one configuration's table, its categories sorted
// by name and its total last, each line prefixed with indent, and returns
// that total.
func printGroupTable(out io.Writer, g *group, indent string) tally {
	fmt.Fprintf(out, "%s%-22s %6s %6s %6s\n", indent, "category", "passed", "failed", "skipped")
	var sub tally
	cats := make([]string, 0, len(g.categories))
	for cat := range g.categories {
		cats = append(cats, cat)
	}
	slices.Sort(cats)
	for _, cat := range cats {
		t := g.categories[cat]
		fmt.Fprintf(out, "%s%-22s %6d %6d %6d\n", indent, cat, t.passed, t.failed, t.skipped)
		sub.add(*t)
	}
	fmt.Fprintf(out, "%s%-22s %6d %6d %6d\n", indent, "total", sub.passed, sub.failed, sub.skipped)
	return sub
}

// printSkipped lists the skipped tests, in input order, with the reason
// each gives.
func printSkipped(out io.Writer, titles map[string]string, leaves []leaf) {
	for _, l := range leaves {
		if l.result.action == "skip" {
			line := "skipped: " + testPath(titles, l)
			if reason := skipReason(l.result.output); reason != "" {
				line += ": " + reason
			}
			fmt.Fprintln(out, line)
		}
	}
}

// printFailed lists the tests that failed or did not finish, in input
// order, each with up to maxFailureLines of its output.
func printFailed(out io.Writer, titles map[string]string, leaves []leaf) {
	for _, l := range leaves {
		switch l.result.action {
		case "pass", "skip":
			continue
		case "fail":
			fmt.Fprintf(out, "FAILED:  %s\n", testPath(titles, l))
		default:
			fmt.Fprintf(out, "FAILED:  %s (did not finish)\n", testPath(titles, l))
		}
		lines := l.result.output
		if len(lines) > maxFailureLines {
			lines = append(lines[:maxFailureLines:maxFailureLines], fmt.Sprintf("    ... %d more lines", len(l.result.output)-maxFailureLines))
		}
		for _, line := range lines {
			fmt.Fprintf(out, "    %s\n", strings.TrimLeft(line, " \t"))
		}
	}
}

// printPackageFailures lists the packages that failed outside their tests,
// each with the last lines of its output, which are all that tell why.
func printPackageFailures(out io.Writer, r *input) {
	for _, pkg := range r.failed {
		fmt.Fprintf(out, "FAILED:  package %s\n", pkg)
		for _, line := range r.pkgLines[pkg] {
			fmt.Fprintf(out, "    %s\n", line)
		}
	}
}

// groupTitles names each configuration for the summary: nothing when the
// run has one configuration and it is a plain top-level test; else the
// configuration's path, without the top-level test's name when every
// configuration shares it.
func groupTitles(prefixes []string) map[string]string {
	titles := map[string]string{}
	if len(prefixes) == 1 && !strings.Contains(prefixes[0], "/") {
		titles[prefixes[0]] = ""
		return titles
	}
	top, _, _ := strings.Cut(prefixes[0], "/")
	shared := true
	for _, p := range prefixes {
		if t, rest, found := strings.Cut(p, "/"); t != top || !found || rest == "" {
			shared = false
		}
	}
	for _, p := range prefixes {
		if shared {
			_, titles[p], _ = strings.Cut(p, "/")
		} else {
			titles[p] = p
		}
	}
	return titles
}

// testPath names a conformance test in the summary.
func testPath(titles map[string]string, l leaf) string {
	if t := titles[l.prefix]; t != "" {
		return t + "/" + l.category + "/" + l.name
	}
	return l.category + "/" + l.name
}

// skipReason is the first line a skipped test printed, without its
// file:line prefix.
func skipReason(output []string) string {
	if len(output) == 0 {
		return ""
	}
	line := strings.TrimSpace(output[0])
	if i := strings.Index(line, ": "); i > 0 && strings.Contains(line[:i], ".go:") {
		line = line[i+2:]
	}
	return line
}
