//go:build !unix

package localstack

import (
	"errors"
	"os"
	"syscall"
)

// embeddedSupported reports whether this platform can install and run the
// embedded emulators.
const embeddedSupported = false

var errUnsupported = errors.New("embedded emulators need a Unix-like system")

func sysProcAttr() *syscall.SysProcAttr { return nil }

func tryLock(*os.File) (bool, error) { return false, errUnsupported }

func unlock(*os.File) error { return errUnsupported }

func terminateGroup(int) error { return errUnsupported }

func killGroup(int) error { return errUnsupported }
