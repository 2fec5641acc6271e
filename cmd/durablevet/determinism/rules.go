package determinism

import (
	"fmt"
	"go/token"
	"go/types"
)

// timeFuncs maps the package time functions that read the wall clock or
// start runtime timers to the replacement named in the report.
var timeFuncs = map[string]string{
	"Now":       "use ctx.Now()",
	"Sleep":     "use ctx.Sleep(d)",
	"After":     "use ctx.CreateTimer(d)",
	"AfterFunc": "use ctx.CreateTimer(d) or ctx.Sleep(d) in durable.Go",
	"NewTimer":  "use ctx.CreateTimer(d)",
	"Tick":      "use ctx.CreateTimer(d) in a loop",
	"NewTicker": "use ctx.CreateTimer(d) in a loop",
	"Since":     "use ctx.Now().Sub(t)",
	"Until":     "use t.Sub(ctx.Now())",
}

// randAdvice is the replacement named for every source of randomness.
const randAdvice = "use ctx.NewGUID or pass randomness in as input"

// mapsIterators are the functions of package maps whose iterators yield in
// map order.
var mapsIterators = map[string]bool{"All": true, "Keys": true, "Values": true}

// envAdvice and fileAdvice are the replacements named for the environment
// and the file system: both differ between workers and over time, and a
// replay must see what the first run saw.
const (
	envAdvice  = "the environment differs between processes and over time; read it in an activity or pass it in as input"
	fileAdvice = "files differ between workers and over time; do file I/O in an activity"
)

// osNames maps the package-level names of package os that read or change the
// process's environment or the file system to their rule. Names that only
// work on values already obtained (File methods, IsNotExist) are not listed.
var osNames = map[string]string{
	// The environment and the process.
	"Getenv": ruleEnv, "LookupEnv": ruleEnv, "Environ": ruleEnv, "ExpandEnv": ruleEnv,
	"Setenv": ruleEnv, "Unsetenv": ruleEnv, "Clearenv": ruleEnv, "Args": ruleEnv,
	"Hostname": ruleEnv, "Executable": ruleEnv, "Getwd": ruleEnv, "Chdir": ruleEnv,
	"Getpid": ruleEnv, "Getppid": ruleEnv, "Getuid": ruleEnv, "Geteuid": ruleEnv,
	"Getgid": ruleEnv, "Getegid": ruleEnv, "Getgroups": ruleEnv,
	"TempDir": ruleEnv, "UserHomeDir": ruleEnv, "UserCacheDir": ruleEnv, "UserConfigDir": ruleEnv,
	// The file system.
	"ReadFile": ruleFile, "ReadDir": ruleFile, "Open": ruleFile, "OpenFile": ruleFile,
	"OpenRoot": ruleFile, "OpenInRoot": ruleFile, "Create": ruleFile, "CreateTemp": ruleFile,
	"MkdirTemp": ruleFile, "WriteFile": ruleFile, "Stat": ruleFile, "Lstat": ruleFile,
	"Readlink": ruleFile, "Remove": ruleFile, "RemoveAll": ruleFile, "Rename": ruleFile,
	"Mkdir": ruleFile, "MkdirAll": ruleFile, "Chmod": ruleFile, "Chown": ruleFile,
	"Lchown": ruleFile, "Chtimes": ruleFile, "Link": ruleFile, "Symlink": ruleFile,
	"Truncate": ruleFile, "DirFS": ruleFile, "CopyFS": ruleFile, "Stdin": ruleFile,
}

// fileFuncs lists, per package, the other package-level functions that reach
// the file system (or, for filepath.Abs, the working directory).
var fileFuncs = map[string]map[string]bool{
	"io/ioutil":     {"ReadFile": true, "ReadDir": true, "WriteFile": true, "TempFile": true, "TempDir": true},
	"path/filepath": {"Glob": true, "Walk": true, "WalkDir": true, "EvalSymlinks": true, "Abs": true},
}

// checkObject records a use of a package-level name that reads the clock,
// starts a timer, gives randomness, or reaches the environment or the file
// system.
func (c *checker) checkObject(b *bodyInfo, pos token.Pos, obj types.Object) {
	if obj == nil || obj.Pkg() == nil {
		return
	}
	pkg := obj.Pkg()
	// Only package-level names: methods, fields and locals are not sources
	// of non-determinism by themselves (a *rand.Rand must come from a
	// reported rand.New, an *os.File from a reported os.Open).
	if obj.Parent() != pkg.Scope() {
		return
	}
	_, isFunc := obj.(*types.Func)
	_, isVar := obj.(*types.Var)
	switch path := pkg.Path(); path {
	case "time":
		if advice, ok := timeFuncs[obj.Name()]; ok && isFunc {
			c.add(b, finding{pos: pos, rule: ruleTime, what: "time." + obj.Name(), advice: advice})
		}
	case "math/rand", "math/rand/v2":
		if isFunc {
			c.add(b, finding{pos: pos, rule: ruleRand, what: path, advice: randAdvice})
		}
	case "crypto/rand":
		if isFunc || isVar {
			c.add(b, finding{pos: pos, rule: ruleRand, what: path, advice: randAdvice})
		}
	case "os":
		if rule, ok := osNames[obj.Name()]; ok && (isFunc || isVar) {
			c.add(b, osFinding(pos, rule, "os."+obj.Name()))
		}
	case "io/ioutil", "path/filepath":
		if fileFuncs[path][obj.Name()] && isFunc {
			c.add(b, osFinding(pos, ruleFile, fmt.Sprintf("%s.%s", pkg.Name(), obj.Name())))
		}
	}
}

// osFinding is the finding of a use of the environment or the file system.
func osFinding(pos token.Pos, rule, what string) finding {
	advice := fileAdvice
	if rule == ruleEnv {
		advice = envAdvice
	}
	return finding{pos: pos, rule: rule, what: what, advice: advice}
}
