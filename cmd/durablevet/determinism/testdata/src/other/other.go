// Package other holds helpers of another package. This tree is GOPATH-style,
// outside any module, so calls into it are not followed.
package other

import "time"

// Stamp reads the wall clock.
func Stamp() time.Time { return time.Now() }
