package scenario

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
)

// libraryModule is the module path of the library the benchmark measures.
const libraryModule = "github.com/duradyn/duradyn"

// LibraryCacheDir returns the emulator cache of the library's module
// (.cache/emulators beside the go.mod that declares
// github.com/duradyn/duradyn), found by walking up from the working
// directory, or "" when there is none. The bench module is a module of its
// own, so localstack, which looks beside the nearest go.mod, would not
// find the library's cache from it: callers pass this directory as
// localstack.Options.CacheDir (or DURADYN_CACHE_DIR) so that the
// emulators installed for the library are reused.
func LibraryCacheDir() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if declaresModule(filepath.Join(dir, "go.mod"), libraryModule) {
			cache := filepath.Join(dir, ".cache", "emulators")
			if fi, err := os.Stat(cache); err == nil && fi.IsDir() {
				return cache
			}
			return ""
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// declaresModule reports whether the go.mod at path declares module.
func declaresModule(path, module string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if fields := strings.Fields(s.Text()); len(fields) == 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`) == module
		}
	}
	return false
}
