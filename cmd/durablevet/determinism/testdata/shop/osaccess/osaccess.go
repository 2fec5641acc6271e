// Package osaccess reads the environment and the file system in an
// orchestration.
package osaccess

import (
	"io/ioutil"
	"os"
	"path/filepath"

	"github.com/duradyn/duradyn/durable"
)

// Config reads its configuration where an activity should.
func Config(ctx *durable.OrchestrationContext) (string, error) {
	region := os.Getenv("REGION")   // want `^os\.Getenv in orchestration: the environment differs between processes and over time; read it in an activity or pass it in as input$`
	zone, _ := os.LookupEnv("ZONE") // want `^os\.LookupEnv in orchestration: the environment differs`
	n := len(os.Environ())          // want `^os\.Environ in orchestration: the environment differs`
	host, _ := os.Hostname()        // want `^os\.Hostname in orchestration: the environment differs`
	_ = os.Args                     // want `^os\.Args in orchestration: the environment differs`
	lookup := os.Getenv             // want `^os\.Getenv in orchestration`
	_ = lookup

	data, err := os.ReadFile("config.json") // want `^os\.ReadFile in orchestration: files differ between workers and over time; do file I/O in an activity$`
	f, err := os.Open("config.json")        // want `^os\.Open in orchestration: files differ`
	_ = f.Close()                           // methods of a file are not reported again
	_ = os.WriteFile("out", data, 0o600)    // want `^os\.WriteFile in orchestration: files differ`
	_, _ = os.Stat("config.json")           // want `^os\.Stat in orchestration: files differ`
	_, _ = ioutil.ReadFile("config.json")   // want `^ioutil\.ReadFile in orchestration: files differ`
	_, _ = filepath.Glob("*.json")          // want `^filepath\.Glob in orchestration: files differ`

	_ = filepath.Join("a", "b") // path arithmetic is fine
	_ = os.IsNotExist(err)      // so is inspecting an error
	return region + zone + host + string(rune(n)), err
}

// Activity reads the environment outside orchestration code: nothing is
// reported, and the function gets the fact a call from an orchestration of
// another package would be reported with.
func Activity(name string) string { // want Activity:`^os\.Getenv through osaccess\.Activity \(osaccess\.go:40\)$`
	return os.Getenv(name)
}
