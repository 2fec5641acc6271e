//go:build race

package goworkflows

// raceEnabled reports whether the tests run under the race detector.
const raceEnabled = true
