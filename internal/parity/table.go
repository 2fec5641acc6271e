package parity

import (
	"errors"
	"fmt"
	"strings"

	"github.com/duradyn/duradyn/tables"
)

// ErrTableMismatch is wrapped by the error [TableParity] returns when the
// tables differ.
var ErrTableMismatch = errors.New("parity: table mismatch")

// TableParity compares terraform, the schema of the table the Terraform
// module created, with reference, the schema of a table [tables.Create]
// created on the same endpoint, both read back with [tables.Describe] (or
// [tables.FromDescription]): keys, global secondary indexes, projections and
// time-to-live attribute.
//
// It also requires reference to equal [tables.Default]. Otherwise an
// endpoint that describes tables incompletely (one that drops projections,
// say) would let two tables that differ in what it leaves out compare
// equal, and the check would prove nothing.
//
// The error wraps [ErrTableMismatch] and lists every difference, in the
// words of [tables.Schema.Diff] ("want" is the expected side).
func TableParity(terraform, reference tables.Schema) error {
	var problems []string
	for _, d := range tables.Default().Diff(reference) {
		problems = append(problems, "reference table (tables.Create) vs tables.Default: "+d)
	}
	for _, d := range reference.Diff(terraform) {
		problems = append(problems, "Terraform table vs reference table: "+d)
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w:\n  %s", ErrTableMismatch, strings.Join(problems, "\n  "))
}
