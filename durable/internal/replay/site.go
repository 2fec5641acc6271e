package replay

import (
	"fmt"
	"path"
	"runtime"
	"strings"
	"sync"

	"github.com/duradyn/duradyn/provider"
)

// Site is where orchestration code made a durable call: the innermost
// frame of the call's stack outside package durable and its internal
// packages (test files of package durable count as orchestration code).
type Site struct {
	// Function is the frame's package-qualified function name.
	Function string
	// File and Line are its source position.
	File string
	Line int
}

// String returns the site as "file.go:42 in pkg.Function", the file
// without its directory.
func (s *Site) String() string {
	if s == nil {
		return "an unknown line"
	}
	fn := s.Function
	if i := strings.LastIndex(fn, "/"); i >= 0 {
		fn = fn[i+1:]
	}
	return fmt.Sprintf("%s:%d in %s", path.Base(s.File), s.Line, fn)
}

// siteDepth is how many frames above Emit a call site is looked for in.
const siteDepth = 16

// maxCachedSites bounds the cache of resolved stacks.
const maxCachedSites = 1 << 14

var (
	// durableDir is package durable's source directory: this file's,
	// two levels up.
	durableDir = func() string {
		_, file, _, _ := runtime.Caller(0)
		return path.Dir(path.Dir(path.Dir(file)))
	}()

	sitesMu sync.RWMutex
	sites   = map[[siteDepth]uintptr]*Site{}
)

// callerSite returns the call site of the action being emitted. Stacks
// are resolved once each: the program counters are cheap to take, their
// symbols are not.
func callerSite() *Site {
	var pcs [siteDepth]uintptr
	runtime.Callers(3, pcs[:]) // above runtime.Callers, callerSite, Emit
	sitesMu.RLock()
	s, ok := sites[pcs]
	sitesMu.RUnlock()
	if ok {
		return s
	}
	s = resolveSite(pcs[:])
	sitesMu.Lock()
	if len(sites) < maxCachedSites {
		sites[pcs] = s
	}
	sitesMu.Unlock()
	return s
}

// resolveSite returns the first frame of pcs that is orchestration code,
// or nil when there is none (a call made by the package's own coroutines,
// such as a retry's).
func resolveSite(pcs []uintptr) *Site {
	frames := runtime.CallersFrames(pcs)
	for {
		f, more := frames.Next()
		if f.PC != 0 && !internalFrame(f) {
			return &Site{Function: f.Function, File: f.File, Line: f.Line}
		}
		if !more {
			return nil
		}
	}
}

// internalFrame reports a frame of package durable (not its tests), of its
// internal packages, or of the Go runtime.
func internalFrame(f runtime.Frame) bool {
	if strings.HasPrefix(f.Function, "runtime.") {
		return true
	}
	if path.Dir(f.File) == durableDir {
		return !strings.HasSuffix(f.File, "_test.go")
	}
	return strings.HasPrefix(f.File, durableDir+"/internal/")
}

// Mismatch is where a run found the code's calls to differ from history.
type Mismatch struct {
	// Position is the index of the call among the calls the execution's
	// code made, from 0, which is also the index of its event among the
	// schedule, custom status and KV events of the execution's history.
	Position int
	// Call describes the call the code made there; "" when it made none.
	Call string
	// Site is where the code made it; nil when unknown (or Call is "").
	Site *Site
	// Recorded describes what history holds there.
	Recorded string
}

// mismatch describes action a (nil: none) meeting history event ev.
func (c *Context) mismatch(a *Action, ev provider.Event) *Mismatch {
	m := &Mismatch{Position: c.emitted, Recorded: describeEvent(ev.Kind)}
	if a != nil {
		m.Position, m.Call = a.seq, describeAction(a)
		if a.seq < len(c.sites) {
			m.Site = c.sites[a.seq]
		}
	}
	return m
}
