package main

import (
	"context"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/duradyn/duradyn/queues"
)

// watchedSQS is the SQS client of one provider, watched: it tells when the
// provider first receives from a queue (it is then waiting for signals) and
// counts the messages it received from each queue.
type watchedSQS struct {
	queues.API

	mu       sync.Mutex
	polling  map[string]chan struct{} // closed at the first receive from a queue
	received map[string]int
}

func newWatchedSQS(api queues.API) *watchedSQS {
	return &watchedSQS{API: api, polling: map[string]chan struct{}{}, received: map[string]int{}}
}

// ReceiveMessage is [sqs.Client.ReceiveMessage], watched.
func (w *watchedSQS) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	url := aws.ToString(in.QueueUrl)
	w.mu.Lock()
	ch := w.pollingLocked(url)
	select {
	case <-ch:
	default:
		close(ch)
	}
	w.mu.Unlock()

	out, err := w.API.ReceiveMessage(ctx, in, optFns...)
	if err == nil && out != nil {
		w.mu.Lock()
		w.received[url] += len(out.Messages)
		w.mu.Unlock()
	}
	return out, err
}

// Polling returns a channel closed once the provider has sent its first
// receive to the queue url.
func (w *watchedSQS) Polling(url string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pollingLocked(url)
}

func (w *watchedSQS) pollingLocked(url string) chan struct{} {
	ch, ok := w.polling[url]
	if !ok {
		ch = make(chan struct{})
		w.polling[url] = ch
	}
	return ch
}

// Received returns how many messages the provider has received from the
// queue url.
func (w *watchedSQS) Received(url string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.received[url]
}
