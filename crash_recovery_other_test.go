//go:build !linux

package duradyn_test

import "os/exec"

// crashDieWithParent does nothing here: runtime processes are killed by the
// test's cleanup.
func crashDieWithParent(*exec.Cmd) {}
