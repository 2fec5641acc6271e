package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
)

// console prints the demo's progress, one timestamped line per event:
//
//	14:03:07.412  node-a  order-1       message  key=value
//
// It also remembers which node logged for which instance, for the report.
type console struct {
	mu    sync.Mutex
	w     io.Writer
	nodes map[string][]string // instance → nodes that logged for it, in order
}

func newConsole(w io.Writer) *console {
	return &console{w: w, nodes: map[string][]string{}}
}

// say prints one line as who (a node, "client", "demo") about instance.
func (c *console) say(who, instance, format string, args ...any) {
	c.line(time.Now(), who, instance, fmt.Sprintf(format, args...))
}

// text prints s as it is.
func (c *console) text(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	io.WriteString(c.w, s)
}

func (c *console) line(t time.Time, who, instance, msg string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fmt.Fprintf(c.w, "%s  %-6s  %-12s  %s\n", t.Format("15:04:05.000"), who, instance, msg)
}

// ran records that node worked on instance.
func (c *console) ran(instance, node string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !slices.Contains(c.nodes[instance], node) {
		c.nodes[instance] = append(c.nodes[instance], node)
	}
}

// nodesOf returns the nodes that logged for the instances, sorted.
func (c *console) nodesOf(instances ...string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, inst := range instances {
		for _, n := range c.nodes[inst] {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	slices.Sort(out)
	return out
}

// logger returns a logger for node whose records the console prints.
func (c *console) logger(node string) *slog.Logger {
	return slog.New(&handler{c: c}).With(attrNode, node)
}

// attrNode is the attribute naming the node a record comes from.
const attrNode = "node"

// hidden are attributes the runtime adds that the console shows in its
// own columns or leaves out.
var hidden = map[string]bool{
	attrNode: true, "runtime_id": true, "instance_id": true, "execution_id": true,
	"orchestration_name": true, "orchestration_version": true, "activity_name": true,
	"activity_id": true, "supported_replay_versions": true, "provider": true,
}

// handler is the slog.Handler behind console.logger: Info and above, with
// the node and instance in columns and other attributes as key=value.
type handler struct {
	c     *console
	attrs []slog.Attr
}

func (h *handler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	return &handler{c: h.c, attrs: append(slices.Clip(h.attrs), as...)}
}

// WithGroup flattens groups: the runtime uses none.
func (h *handler) WithGroup(string) slog.Handler { return h }

func (h *handler) Handle(_ context.Context, r slog.Record) error {
	var node, instance string
	var extra strings.Builder
	add := func(a slog.Attr) bool {
		switch a.Key {
		case attrNode:
			node = a.Value.String()
		case "instance_id":
			instance = a.Value.String()
		}
		if !hidden[a.Key] && a.Key != "" {
			fmt.Fprintf(&extra, "  %s=%v", a.Key, a.Value.Resolve())
		}
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	msg := r.Message
	switch {
	case r.Level >= slog.LevelError:
		msg = "ERROR " + msg
	case r.Level >= slog.LevelWarn:
		msg = "WARN  " + msg
	}
	if node != "" && instance != "" {
		h.c.ran(instance, node)
	}
	h.c.line(r.Time, node, instance, msg+extra.String())
	return nil
}
