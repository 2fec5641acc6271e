// Package lambdasim runs Lambda functions in tests the way AWS Lambda runs
// them, without AWS: a [Function] is a pool of execution environments, each
// serving one invocation at a time under a deadline, killed when the
// handler outlives it; an [EventSourceMapping] long-polls an SQS queue (the
// emulator the tests run) and invokes the function with real
// events.SQSEvent batches, deleting what the response does not report as
// failed and leaving the rest to the queue's visibility timeout; a
// [Schedule] invokes it at a fixed rate, as an EventBridge Scheduler
// schedule does.
//
// An environment is either a handler in this process
// ([HandlerEnvironment]), whose AWS clients send through a [Cutoff] so that
// killing it ends its I/O as the end of a sandbox would, or a built
// bootstrap binary run as a process behind a fake Lambda Runtime API
// ([RuntimeAPI], [ProcessEnvironment]), which exercises aws-lambda-go's
// lambda.Start.
//
// [Function.Chaos] kills invocations mid-flight, as a crashed sandbox, or
// one frozen and then reclaimed, ends them: the environment's requests in
// flight are abandoned, nothing more leaves it, and the event source
// mapping deletes none of the batch.
package lambdasim
