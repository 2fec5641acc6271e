// Package vendorlib belongs to another module: calls into it are not
// followed.
package vendorlib

import "time"

// Stamp reads the wall clock.
func Stamp() time.Time { return time.Now() }
