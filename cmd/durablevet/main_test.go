package main_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"text/scanner"
	"time"
)

// fixture is the module holding a package for each rule that needs a module
// (calls across packages, environment and file access, package-level
// writes, atomics, ContinueAsNew, the map-range directive), relative to this
// package's directory.
const fixture = "determinism/testdata/shop"

// TestBinaryReportsEveryCase builds durablevet and runs it on the fixture
// module, standalone and as go vet's tool: each run must fail, and report
// exactly the want comments of the fixture's files, each at its file and
// line and with a matching message.
func TestBinaryReportsEveryCase(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build durablevet: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "durablevet")
	// go vet caches a package's result under the tool's build ID, also when
	// it ran the tool on the package only for the facts of a dependant, and
	// then replays that empty result when asked for the package itself. A
	// build ID of its own keeps earlier runs from hiding reports.
	buildID := fmt.Sprintf("-ldflags=-buildid=durablevet-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	if out, err := exec.Command(goTool, "build", buildID, "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir, err := filepath.Abs(fixture)
	if err != nil {
		t.Fatal(err)
	}
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		t.Fatal(err)
	}
	want, err := readWants(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) == 0 {
		t.Fatal("the fixture has no want comments")
	}

	t.Run("Standalone", func(t *testing.T) {
		out, code := runIn(t, dir, bin, "./...")
		if code != 3 {
			t.Errorf("durablevet ./... exited with %d, want 3 (reports found)\n%s", code, out)
		}
		checkReports(t, dir, out, want)
	})
	t.Run("VetTool", func(t *testing.T) {
		out, code := runIn(t, dir, goTool, "vet", "-vettool="+bin, "./...")
		if code == 0 {
			t.Errorf("go vet -vettool exited with 0, want a failure\n%s", out)
		}
		checkReports(t, dir, out, want)
	})
}

// runIn runs name with args in dir, in the fixture's own module with no
// network, and returns its combined output and exit code.
func runIn(t *testing.T, dir, name string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOPROXY=off")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	default:
		t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
		return "", 0
	}
}

// place is a file and line of the fixture.
type place struct {
	file string
	line int
}

func (p place) String() string { return fmt.Sprintf("%s:%d", p.file, p.line) }

// reportLine matches a report: file:line:column: message.
var reportLine = regexp.MustCompile(`^(\S+\.go):(\d+):\d+: (.*)$`)

// checkReports checks that out holds, for each place of want, one report
// matching each of its patterns, and no other report.
func checkReports(t *testing.T, dir, out string, want map[place][]*regexp.Regexp) {
	t.Helper()
	got := make(map[place][]string)
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		m := reportLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		file := m[1]
		if !filepath.IsAbs(file) {
			file = filepath.Join(dir, file)
		}
		line, _ := strconv.Atoi(m[2])
		p := place{file: file, line: line}
		got[p] = append(got[p], m[3])
	}
	for p, patterns := range want {
		msgs := got[p]
		delete(got, p)
		for _, rx := range patterns {
			i := indexMatch(msgs, rx)
			if i < 0 {
				t.Errorf("%s: no report matching %q\noutput:\n%s", p, rx, out)
				continue
			}
			msgs = append(msgs[:i], msgs[i+1:]...)
		}
		for _, m := range msgs {
			t.Errorf("%s: unexpected report %q", p, m)
		}
	}
	var extra []string
	for p, msgs := range got {
		for _, m := range msgs {
			extra = append(extra, p.String()+": "+m)
		}
	}
	sort.Strings(extra)
	for _, e := range extra {
		t.Errorf("unexpected report %s", e)
	}
}

// indexMatch returns the index of the first message rx matches, or -1.
func indexMatch(msgs []string, rx *regexp.Regexp) int {
	for i, m := range msgs {
		if rx.MatchString(m) {
			return i
		}
	}
	return -1
}

// readWants returns the diagnostic patterns of the want comments of the Go
// files of the module at dir, by place; the modules nested in it (the
// stand-in runtime, the other module) and fact expectations (name:"...")
// are left out.
func readWants(dir string) (map[place][]*regexp.Regexp, error) {
	want := make(map[place][]*regexp.Regexp)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != dir {
				return filepath.SkipDir
			}
			return nil
		}
		if filepath.Ext(path) != ".go" {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("read fixture: %w", err)
		}
		for i, text := range bytes.Split(src, []byte("\n")) {
			_, rest, ok := bytes.Cut(text, []byte("// want "))
			if !ok {
				continue
			}
			patterns, err := diagnosticPatterns(string(rest))
			if err != nil {
				return fmt.Errorf("%s:%d: %w", path, i+1, err)
			}
			if len(patterns) > 0 {
				want[place{file: path, line: i + 1}] = patterns
			}
		}
		return nil
	})
	return want, err
}

// diagnosticPatterns parses the expectations of a want comment, as
// analysistest does, and returns those of diagnostics.
func diagnosticPatterns(text string) ([]*regexp.Regexp, error) {
	var s scanner.Scanner
	s.Init(strings.NewReader(text))
	s.Mode = scanner.ScanIdents | scanner.ScanStrings | scanner.ScanRawStrings
	var out []*regexp.Regexp
	fact := false
	for tok := s.Scan(); tok != scanner.EOF; tok = s.Scan() {
		switch tok {
		case scanner.Ident, ':':
			fact = true
		case scanner.String, scanner.RawString:
			if fact {
				fact = false
				continue
			}
			pattern, err := strconv.Unquote(s.TokenText())
			if err != nil {
				return nil, fmt.Errorf("want pattern: %w", err)
			}
			rx, err := regexp.Compile(pattern)
			if err != nil {
				return nil, fmt.Errorf("want pattern: %w", err)
			}
			out = append(out, rx)
		}
	}
	return out, nil
}
