// Package parity checks that the Terraform module and the Go code describe
// the same infrastructure.
//
// Two things can drift apart:
//
//   - The IAM policy the module grants. Its action lists live in
//     terraform/iam_actions.json; [RequiredIAMActions] derives the actions
//     the provider needs from the method sets of the interfaces that list
//     every SDK operation it calls (dynamo.API and queues.API), through one
//     explicit table of SDK operation to IAM actions, and [IAMActions.Diff]
//     compares the two. The package's tests fail on any difference, so a
//     new SDK call cannot ship without its permission and nothing is
//     granted that no call needs.
//   - The table. [TableParity] compares the schema of the table Terraform
//     created with that of a reference table created by tables.Create, as
//     read back from the same endpoint (internal/cmd/tfsmoke runs it after applying
//     the module, in make tf-test).
package parity
