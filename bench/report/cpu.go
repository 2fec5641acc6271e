package report

import (
	"syscall"
	"time"
)

// ProcessCPU returns the processor time, user and system, this process
// has used so far; zero when the system does not say. Result.CPU is the
// difference of two readings around a measured part.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
