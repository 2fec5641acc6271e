// Package dynamo will hold the DynamoDB + SQS implementation of
// [github.com/dynoxide/dynoxide/provider.Provider]. It currently holds the
// key encoding of the single-table design; docs/design.md describes the data
// model, the request sequence of every operation and the commit protocol the
// provider is being built to.
package dynamo
