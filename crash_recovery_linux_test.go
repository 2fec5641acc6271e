package duradyn_test

import (
	"os/exec"
	"syscall"
)

// crashDieWithParent makes the kernel kill cmd's process if the test binary
// dies first, so that no runtime process outlives an aborted test.
func crashDieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
