//go:build !unix

package main

import (
	"errors"
	"os"
	"syscall"
)

// errDevUnsupported says that duradyn dev needs a Unix-like system, as the
// embedded emulators do.
var errDevUnsupported = errors.New("duradyn dev needs a Unix-like system; point DURADYN_DYNAMODB_ENDPOINT and DURADYN_SQS_ENDPOINT at running emulators instead")

func lockFile(string) (*os.File, bool, error) { return nil, false, errDevUnsupported }

func closeOnExec(int) {}

func isConnRefused(error) bool { return false }

func detachedProcAttr() *syscall.SysProcAttr { return nil }

func terminate(p *os.Process) error { return p.Kill() }
