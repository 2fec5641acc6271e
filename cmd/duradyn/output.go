package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/internal/linelog"
	"github.com/duradyn/duradyn/provider"
)

// jsonOut reports whether results are printed as JSON.
func (a *app) jsonOut() bool { return a.g.output == "json" }

// printJSON writes v as one indented JSON document.
func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// table returns a tab writer for aligned columns on stdout.
func (a *app) table() *tabwriter.Writer {
	return tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
}

// fields prints name/value pairs aligned.
func (a *app) fields(pairs ...string) error {
	tw := a.table()
	for i := 0; i+1 < len(pairs); i += 2 {
		fmt.Fprintf(tw, "%s\t%s\n", pairs[i], pairs[i+1])
	}
	return tw.Flush()
}

// progressf prints a progress line on stderr.
func (a *app) progressf(format string, args ...any) {
	fmt.Fprintf(a.stderr, "duradyn: "+format+"\n", args...)
}

// logger returns the logger of the library packages the command uses
// (their Logger options): a line on stderr per record of level Info and
// above, "duradyn: warning: dynamo: ... key=value" (package linelog).
func (a *app) logger() *slog.Logger {
	return linelog.New(func(line string) { fmt.Fprintf(a.stderr, "duradyn: %s\n", line) }, slog.LevelInfo)
}

// timeLayout prints times in UTC with milliseconds; every printed time has
// the same width.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// fmtMs formats epoch milliseconds; "-" for 0.
func fmtMs(ms uint64) string {
	if ms == 0 {
		return "-"
	}
	return time.UnixMilli(int64(ms)).UTC().Format(timeLayout)
}

func fmtMsPtr(ms *uint64) string {
	if ms == nil {
		return "-"
	}
	return fmtMs(*ms)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func strPtrOrDash(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}

// statusJSON is a status in JSON output. Fields an instance's info also
// has (infoJSON) have the same names there.
type statusJSON struct {
	Instance            string  `json:"instance"`
	Status              string  `json:"status"`
	ExecutionID         uint64  `json:"execution_id"`
	Output              *string `json:"output,omitempty"`
	Failure             *string `json:"failure,omitempty"`
	FailureCategory     string  `json:"failure_category,omitempty"`
	CustomStatus        *string `json:"custom_status,omitempty"`
	CustomStatusVersion uint64  `json:"custom_status_version"`
}

func toStatusJSON(s *durable.Status) statusJSON {
	out := statusJSON{
		Instance:            s.Instance,
		Status:              stateName(s),
		ExecutionID:         s.ExecutionID,
		CustomStatus:        s.CustomStatus,
		CustomStatusVersion: s.CustomStatusVersion,
	}
	switch s.State {
	case durable.StateCompleted:
		out.Output = &s.Output
	case durable.StateFailed:
		if s.Failure != nil {
			msg := s.Failure.DisplayMessage()
			out.Failure = &msg
			out.FailureCategory = s.Failure.Category()
		}
	}
	return out
}

// printStatus prints a status.
func (a *app) printStatus(s *durable.Status) error {
	if a.jsonOut() {
		return a.printJSON(toStatusJSON(s))
	}
	pairs := []string{"instance", s.Instance, "status", stateName(s), "execution", strconv.FormatUint(s.ExecutionID, 10)}
	switch s.State {
	case durable.StateCompleted:
		pairs = append(pairs, "output", s.Output)
	case durable.StateFailed:
		if s.Failure != nil {
			pairs = append(pairs, "failure", s.Failure.Category()+": "+s.Failure.DisplayMessage())
		}
	}
	if s.CustomStatus != nil {
		pairs = append(pairs, "custom status", fmt.Sprintf("%s (version %d)", *s.CustomStatus, s.CustomStatusVersion))
	}
	return a.fields(pairs...)
}

// stateName is s's state as the commands show it: Canceled for a
// cancelled instance (stored as Failed).
func stateName(s *durable.Status) string {
	if d, ok := s.Failure.(provider.ApplicationDetails); ok && s.State == durable.StateFailed && d.Kind.Code == provider.AppCancelled {
		return provider.StatusCanceled
	}
	return s.State.String()
}

// eventCommon are the event fields the history table shows in columns.
var eventCommon = []string{"event_id", "source_event_id", "instance_id", "execution_id", "timestamp_ms", "duroxide_version", "type"}

// eventDetails returns the kind-specific fields of e as compact JSON with
// sorted keys.
func eventDetails(e provider.Event) (string, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return "", err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return "", err
	}
	for _, k := range eventCommon {
		delete(m, k)
	}
	if len(m) == 0 {
		return "", nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return "", err
	}
	return strings.TrimSpace(buf.String()), nil
}

// writeEventLines writes events as duroxide JSON lines.
func writeEventLines(w io.Writer, events []provider.Event) error {
	var buf bytes.Buffer
	for _, e := range events {
		b, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("encoding event %d: %w", e.EventID, err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	_, err := w.Write(buf.Bytes())
	return err
}
