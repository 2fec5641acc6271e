//go:build unix

package localstack

import (
	"errors"
	"os"
	"syscall"
)

// embeddedSupported reports whether this platform can install and run the
// embedded emulators.
const embeddedSupported = true

// tryLock takes an exclusive advisory lock on f without blocking. It reports
// false, nil when another process holds the lock.
func tryLock(f *os.File) (bool, error) {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}

// unlock releases a lock taken by tryLock.
func unlock(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}

// terminateGroup asks the process group led by pid to exit.
func terminateGroup(pid int) error {
	return signalGroup(pid, syscall.SIGTERM)
}

// killGroup kills the process group led by pid.
func killGroup(pid int) error {
	return signalGroup(pid, syscall.SIGKILL)
}

func signalGroup(pid int, sig syscall.Signal) error {
	err := syscall.Kill(-pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}
