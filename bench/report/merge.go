package report

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Merge writes results into a directory that already holds a run's
// results, written by [WriteWithHeader]: it writes each scenario's .md and
// .svg anew and replaces that scenario's section of README.md, or appends
// one when README.md has none, keeping the other sections and README.md's
// own header. header (the date, the machine and the command of this run)
// goes under the heading of each section written, and under the title of
// each scenario's .md, since it differs from the header of the run around
// it. It is how a scenario is run again, or a new one added, without
// rerunning the whole benchmark. A missing README.md is written with the
// scenarios' sections only.
func Merge(dir, header string, results []Result) error {
	groups, err := groupByScenario(results)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	old, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("report: %w", err)
	}
	preamble, sections := splitSections(string(old))
	if strings.TrimSpace(preamble) == "" {
		preamble = readmeTitle + "\n"
	}
	header = strings.TrimSpace(header)
	for _, g := range groups {
		base := fileName(g.scenario)
		section := scenarioSection(g.scenario, base, g.results)
		if header != "" {
			heading, body, _ := strings.Cut(section, "\n\n")
			section = heading + "\n\n" + header + "\n\n" + body
		}
		if err := writeFile(dir, base+".md", "# "+section); err != nil {
			return err
		}
		if err := writeFile(dir, base+".svg", svgChart(g.scenario, g.results)); err != nil {
			return err
		}
		sections = replaceSection(sections, markdownCell(g.scenario), "## "+section)
	}
	var b strings.Builder
	b.WriteString(strings.TrimRight(preamble, "\n") + "\n")
	for _, s := range sections {
		b.WriteString("\n" + strings.TrimRight(s.text, "\n") + "\n")
	}
	return writeFile(dir, "README.md", b.String())
}

// readmeSection is one "## " section of README.md: its heading's text and
// the whole section, heading included.
type readmeSection struct {
	heading, text string
}

// splitSections splits a README.md into what precedes its first "## "
// heading and its sections, in order.
func splitSections(readme string) (preamble string, sections []readmeSection) {
	lines := strings.SplitAfter(readme, "\n")
	var pre strings.Builder
	for _, line := range lines {
		if heading, ok := strings.CutPrefix(line, "## "); ok {
			sections = append(sections, readmeSection{heading: strings.TrimSpace(heading)})
		}
		if len(sections) == 0 {
			pre.WriteString(line)
			continue
		}
		sections[len(sections)-1].text += line
	}
	return pre.String(), sections
}

// replaceSection returns sections with the one headed heading replaced by
// text, or with text appended when there is none.
func replaceSection(sections []readmeSection, heading, text string) []readmeSection {
	for i, s := range sections {
		if s.heading == heading {
			sections[i].text = text
			return sections
		}
	}
	return append(sections, readmeSection{heading: heading, text: text})
}
