package dynamo_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/duradyn/duradyn/dynamo"
)

// TestClientOfNewTimesOutOnASilentEndpoint: the DynamoDB client New builds
// bounds each HTTP attempt (Options.RequestTimeout) and its retries, so a
// request to an endpoint that accepts connections and never answers fails
// instead of waiting for the caller's deadline.
func TestClientOfNewTimesOutOnASilentEndpoint(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	cfg := aws.Config{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String("http://" + ln.Addr().String()),
	}
	const timeout = 200 * time.Millisecond
	p, err := dynamo.New(cfg, func(o *dynamo.Options) {
		o.TableName = "silent"
		o.RequestTimeout = timeout
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	_, err = p.InstanceInfo(ctx, "any")
	if err == nil {
		t.Fatal("InstanceInfo against an endpoint that never answers succeeded")
	}
	if ctx.Err() != nil || errors.Is(err, context.Canceled) {
		t.Fatalf("InstanceInfo waited for the caller's deadline (%v): the client has no request timeout", err)
	}
}
