//go:build unix && !linux

package localstack

import "syscall"

// sysProcAttr puts a server in its own process group so Stop can signal
// everything it spawned. This platform has no parent-death signal: servers of
// a test binary that is killed outright keep running until killed by hand.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
