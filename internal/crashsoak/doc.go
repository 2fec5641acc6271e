// Package crashsoak measures how soon work held by a process killed with
// SIGKILL is taken over by the others. It builds a worker command
// (internal/cmd/crashworker), runs runtimes of default lease options in
// worker processes on one DynamoDB table and its SQS wake-up queues, lets
// one process (the victim) hold work of every kind it can hold when it
// dies (activities running, orchestration turns under way, an activity a
// turn handed to a waiting worker slot that never started it), kills it,
// and times, for each item it held, how long until another process
// fetched it.
//
// Both the recovery test of this package and the bench scenario Recovery
// run it.
package crashsoak
