package crashsoak

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel kill cmd's process if its parent dies
// first, so that no worker outlives an aborted run.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
