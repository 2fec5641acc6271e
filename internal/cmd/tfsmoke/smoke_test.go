package main

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/duradyn/duradyn/queues"
)

// fakeSQS answers ReceiveMessage with receive; it has no other operation.
type fakeSQS struct {
	queues.API
	receive func(context.Context) (*sqs.ReceiveMessageOutput, error)
}

func (f *fakeSQS) ReceiveMessage(ctx context.Context, _ *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	return f.receive(ctx)
}

// wokenFetch accepts only work found through a message received over SQS
// after the commit, before the poll timeout.
func TestWokenFetch(t *testing.T) {
	const url = "http://127.0.0.1:1/123456789012/q"
	type outcome int
	const (
		polledAndGotMessage outcome = iota
		polledNoMessage
		neverPolled
		polledNoWork
	)
	for _, tc := range []struct {
		name        string
		fetch       outcome
		pollTimeout time.Duration
		commitErr   error
		wantErr     string
	}{
		{name: "woken over SQS", fetch: polledAndGotMessage, pollTimeout: time.Minute},
		{name: "work but no message", fetch: polledNoMessage, pollTimeout: time.Minute, wantErr: "received no message"},
		{name: "never polled", fetch: neverPolled, pollTimeout: time.Minute, wantErr: "returned before it polled"},
		{name: "no work", fetch: polledNoWork, pollTimeout: time.Minute, wantErr: "found no work"},
		{name: "work only after the poll timeout", fetch: polledAndGotMessage, pollTimeout: time.Nanosecond, wantErr: "when its poll timeout ran out"},
		{name: "commit fails", fetch: polledAndGotMessage, pollTimeout: time.Minute, commitErr: errors.New("boom"), wantErr: "commit: boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			committed := make(chan struct{})
			messages := 1
			if tc.fetch == polledNoMessage {
				messages = 0
			}
			w := newWatchedSQS(&fakeSQS{receive: func(ctx context.Context) (*sqs.ReceiveMessageOutput, error) {
				select {
				case <-committed:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				return &sqs.ReceiveMessageOutput{Messages: make([]types.Message, messages)}, nil
			}})
			n := &node{name: "n", sqs: w}
			fetch := func(ctx context.Context) (*string, error) {
				if tc.fetch == neverPolled {
					return aws.String("work"), nil
				}
				if _, err := w.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url)}); err != nil {
					return nil, err
				}
				if tc.fetch == polledNoWork {
					return nil, nil
				}
				return aws.String("work"), nil
			}
			commit := func() error {
				close(committed)
				return tc.commitErr
			}
			got, err := wokenFetch(ctx, &logger{w: io.Discard, start: time.Now()}, n, url, tc.pollTimeout, "fetch", fetch, "commit", commit)
			if tc.wantErr == "" {
				if err != nil || got == nil || *got != "work" {
					t.Fatalf("wokenFetch = %v, %v; want the work", got, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("wokenFetch error = %v, want one saying %q", err, tc.wantErr)
			}
		})
	}
}
