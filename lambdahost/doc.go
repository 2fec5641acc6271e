// Package lambdahost runs duradyn's runtime on AWS Lambda: a function that
// an SQS event source mapping on each wake-up queue invokes with batches of
// signals, and that an EventBridge Scheduler schedule invokes to sweep.
// docs/lambda.md is the deployment guide; terraform/modules/lambda-worker
// provisions the function, the mappings, the schedule and the alarms.
//
// The model:
//
//   - One [Host] per execution environment, built at initialisation
//     ([Start], or [New] and aws-lambda-go's lambda.Start with
//     [Host.Handle]). It keeps the DynamoDB provider, whose history cache,
//     clock-skew measure and layout check serve every invocation of the
//     environment, and which receives nothing from SQS itself
//     (dynamo.Options.ReceiveElsewhere): the mappings consume the queues.
//     A queue is consumed either by a mapping or by long-running
//     processes' pollers, never both.
//   - A batch ([Host.HandleSQS]) hands its signals to the provider's
//     fetches and runs a runtime until it is idle ([Options.Idle]) or
//     [Options.StopBefore] before the deadline, then shuts it down: a turn
//     in flight commits, an activity still running is cancelled and
//     abandoned without counting an attempt. Work the invocation's own
//     turns make is taken by its own slots while it runs (a chain runs in
//     one invocation); what it cannot take goes out as signals, to other
//     invocations. Messages whose signal no fetch acted on are returned as
//     batch item failures, with their visibility shortened to a backoff
//     ([Options.RetryDelay]).
//   - A scheduled sweep ([Host.HandleSweep]) finds what no signal
//     announces: lost signals, timers beyond SQS's 15-minute delay, leases
//     left by invocations that were frozen or timed out.
//   - Nothing of an invocation runs after it returns: the runtime is shut
//     down, posted signals are sent, and the signals no fetch took are
//     taken back ([dynamo.Provider.TakeUnusedSignals]).
//
// Activities must finish within the function's timeout minus StopBefore;
// longer ones run on a long-running worker that serves their tag (docs/lambda.md).
package lambdahost
