package report

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrNoScenario is returned by [Write] for a result whose Scenario is empty:
// it would have no file to go to.
var ErrNoScenario = errors.New("report: result without a scenario")

// ErrFileNameClash is returned by [Write] when two scenario names map to the
// same file name.
var ErrFileNameClash = errors.New("report: scenarios share a file name")

// readmeTitle is the first line of README.md.
const readmeTitle = "# Benchmark results"

// percentileNote explains the latency columns under tables that have them.
const percentileNote = "Latency percentiles by nearest rank: p50 (p99) is the smallest measured value " +
	"that at least 50 % (99 %) of the samples do not exceed; no interpolation."

// Write writes the results to dir (created if missing), grouped by
// Scenario in order of first appearance, each group's rows in input order:
//
//   - dir/<Scenario>.md: the scenario's table, and its chart;
//   - dir/<Scenario>.svg: a bar chart of activities per second per system,
//     or of the first Extra figure by name when no system of the scenario
//     completed activities;
//   - dir/README.md: every scenario's table with its chart.
//
// A table has one row per result and leaves out the columns that are
// empty in every row. Figures per activity are empty when no activity
// completed; DynamoDB figures when DynamoDB is nil, SQS figures when SQS is
// nil, and $/million activities, peer commands and latencies when they are
// zero or missing. The output depends only on results, so it diffs well
// when committed. Characters other than letters, digits, '.', '-' and '_'
// become '_' in file names.
func Write(dir string, results []Result) error {
	return WriteWithHeader(dir, "", results)
}

// WriteWithHeader is [Write] with header (markdown, for example the date and
// the machine of the run) placed under the title of README.md.
func WriteWithHeader(dir, header string, results []Result) error {
	groups, err := groupByScenario(results)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	var readme strings.Builder
	readme.WriteString(readmeTitle + "\n")
	if header = strings.TrimSpace(header); header != "" {
		readme.WriteString("\n" + header + "\n")
	}
	for _, g := range groups {
		base := fileName(g.scenario)
		section := scenarioSection(g.scenario, base, g.results)
		if err := writeFile(dir, base+".md", "# "+section); err != nil {
			return err
		}
		if err := writeFile(dir, base+".svg", svgChart(g.scenario, g.results)); err != nil {
			return err
		}
		readme.WriteString("\n## " + section)
	}
	return writeFile(dir, "README.md", readme.String())
}

// scenario is the results of one scenario, in input order.
type scenario struct {
	scenario string
	results  []Result
}

func groupByScenario(results []Result) ([]scenario, error) {
	var groups []scenario
	index := map[string]int{}
	for _, r := range results {
		if r.Scenario == "" {
			return nil, fmt.Errorf("%w (system %q)", ErrNoScenario, r.System)
		}
		i, ok := index[r.Scenario]
		if !ok {
			i = len(groups)
			index[r.Scenario] = i
			groups = append(groups, scenario{scenario: r.Scenario})
		}
		groups[i].results = append(groups[i].results, r)
	}
	scenarioOf := map[string]string{} // file name → scenario
	for _, g := range groups {
		base := fileName(g.scenario)
		if other, taken := scenarioOf[base]; taken {
			return nil, fmt.Errorf("%w: %q and %q", ErrFileNameClash, other, g.scenario)
		}
		scenarioOf[base] = g.scenario
	}
	return groups, nil
}

// scenarioSection returns the heading text (without the leading "#"s), the
// table and the chart of one scenario, in markdown.
func scenarioSection(name, base string, results []Result) string {
	var b strings.Builder
	b.WriteString(markdownCell(name) + "\n\n")
	b.WriteString(markdownTable(results))
	for _, r := range results {
		if len(r.Latencies) > 0 {
			b.WriteString("\n" + percentileNote + "\n")
			break
		}
	}
	fmt.Fprintf(&b, "\n[![%s chart](%s.svg)](%s.svg)\n", markdownCell(name), base, base)
	return b.String()
}

// fileName turns a scenario name into a file name without extension.
func fileName(scenario string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			return r
		}
		return '_'
	}, scenario)
}

func writeFile(dir, name, content string) error {
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}
