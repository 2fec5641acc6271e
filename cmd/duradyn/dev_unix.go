//go:build unix

package main

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes an exclusive lock on the file at path without waiting. It
// returns the open file holding the lock (closing it releases the lock), or
// false when another process holds it.
func lockFile(path string) (*os.File, bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, false, err
	}
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		f.Close()
		return nil, false, nil
	}
	if err != nil {
		f.Close()
		return nil, false, err
	}
	return f, true, nil
}

// closeOnExec keeps descriptor fd from the programs this process starts.
func closeOnExec(fd int) { syscall.CloseOnExec(fd) }

// isConnRefused reports whether err says that nothing listens on a socket.
func isConnRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

// detachedProcAttr starts a process in a session of its own, so that it
// outlives the terminal and the shell that started it.
func detachedProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

// terminate asks process p to stop.
func terminate(p *os.Process) error { return p.Signal(syscall.SIGTERM) }
