package localstack

import "syscall"

// sysProcAttr puts a server in its own process group (so Stop can signal
// everything it spawned) and asks the kernel to SIGKILL it when the thread
// that started it dies, so servers never outlive a crashed or killed test
// binary. The Go runtime does not retire threads unless a goroutine exits
// while locked to one, which this package never does.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
