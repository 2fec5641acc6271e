// Package other holds helpers of another package: calls into it are not
// followed.
package other

import "time"

// Stamp reads the wall clock.
func Stamp() time.Time { return time.Now() }
