// Package linelog turns [log/slog] records into one human-readable line
// each, for the commands and tests that print what the library's packages
// log (their Logger options) among lines of their own.
package linelog

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
)

// New returns a logger that passes each record of level minLevel or above to
// print as one line without a trailing newline: the message, preceded by
// "warning: ", "error: " or "debug: " unless the record is at Info, and
// followed by its attributes in the form of [slog.TextHandler]
// (" key=value", quoted where needed, groups as "group.key"). The time is
// left out. print is called for one record at a time.
func New(print func(line string), minLevel slog.Leveler) *slog.Logger {
	out := &output{print: print}
	text := slog.NewTextHandler(&out.attrs, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == slog.LevelKey || a.Key == slog.MessageKey) {
				return slog.Attr{}
			}
			return a
		},
	})
	return slog.New(handler{out: out, text: text, minLevel: minLevel})
}

// output is the state a handler and the handlers derived from it share.
type output struct {
	print func(string)
	mu    sync.Mutex
	attrs bytes.Buffer // what text wrote for the record being handled
}

// handler is the slog.Handler of [New]: text formats the attributes, into
// out.attrs.
type handler struct {
	out      *output
	text     slog.Handler
	minLevel slog.Leveler
}

func (h handler) Enabled(_ context.Context, l slog.Level) bool {
	return l >= h.minLevel.Level()
}

func (h handler) Handle(ctx context.Context, r slog.Record) error {
	var level string
	switch {
	case r.Level >= slog.LevelError:
		level = "error: "
	case r.Level >= slog.LevelWarn:
		level = "warning: "
	case r.Level < slog.LevelInfo:
		level = "debug: "
	}
	h.out.mu.Lock()
	defer h.out.mu.Unlock()
	h.out.attrs.Reset()
	if err := h.text.Handle(ctx, r); err != nil {
		return err
	}
	line := level + r.Message
	if attrs := strings.TrimSpace(h.out.attrs.String()); attrs != "" {
		line += " " + attrs
	}
	h.out.print(line)
	return nil
}

func (h handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	h.text = h.text.WithAttrs(attrs)
	return h
}

func (h handler) WithGroup(name string) slog.Handler {
	h.text = h.text.WithGroup(name)
	return h
}
