// Package bench is duradyn's end-to-end benchmark harness: the runtime on
// memprovider, on the DynamoDB provider (DynamoDB Local, with and without
// SQS, and behind a latency-injecting proxy), and go-workflows as the peer,
// measured in one run on one machine. It is its own module so that the
// peer's dependencies stay out of the library's go.mod. `make bench-e2e`
// runs it and writes bench/results/.
package bench
