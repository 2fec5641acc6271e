package billing

import (
	"fmt"
	"time"
)

// AWS Lambda list prices used by [LambdaCost]: US East (N. Virginia),
// us-east-1, functions on the arm64 architecture (Graviton), on-demand,
// from the AWS Lambda pricing page (https://aws.amazon.com/lambda/pricing/),
// checked on 2026-12-04. They are the first paid tier; the free tier (a
// million requests and 400,000 GB-seconds a month) is left out, so that a
// figure scales with the work measured.
const (
	// LambdaRequestPrice is the price of one invocation in dollars: $0.20
	// per million requests, the same on arm64 and x86_64.
	LambdaRequestPrice = 0.20 / 1e6
	// LambdaARMGBSecondPrice is the price of one GB-second of duration on
	// arm64 in dollars: $0.0000133334, the tier of the first 6 billion
	// GB-seconds a month ($0.0000166667 on x86_64).
	LambdaARMGBSecondPrice = 0.0000133334
)

// LambdaBillingGranularity is the unit Lambda rounds each invocation's
// duration up to: one millisecond, with no minimum, since December 2020
// (https://aws.amazon.com/blogs/aws/new-for-aws-lambda-1ms-billing-granularity-adds-cost-savings/).
const LambdaBillingGranularity = time.Millisecond

// LambdaMemorySizes are the memory sizes, in MB, the serverless cost is
// given at.
var LambdaMemorySizes = []int{128, 256, 512}

// LambdaBilledDuration is the duration Lambda bills for an invocation that
// ran for d: rounded up to the millisecond. For an invocation that started
// an execution environment, d includes the environment's initialisation
// (the INIT phase), which Lambda bills on custom runtimes such as
// provided.al2023, and on all runtimes since August 2025
// (https://aws.amazon.com/blogs/compute/aws-lambda-standardizes-billing-for-init-phase/).
func LambdaBilledDuration(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return (d + LambdaBillingGranularity - 1) / LambdaBillingGranularity * LambdaBillingGranularity
}

// LambdaGBSeconds is the compute billed for a billed duration at a memory
// size of memoryMB: seconds times gigabytes, a gigabyte being 1,024 MB (a
// 512 MB function is billed 0.5 GB-s a second).
func LambdaGBSeconds(billed time.Duration, memoryMB int) float64 {
	return billed.Seconds() * float64(memoryMB) / 1024
}

// LambdaCost is what a set of invocations of one function costs: their
// number and billed durations, priced at a memory size.
type LambdaCost struct {
	// Invocations is the number of invocations: one request each.
	Invocations int
	// Billed is the sum of the invocations' billed durations
	// ([LambdaBilledDuration] of each, summed after rounding).
	Billed time.Duration
}

// Add counts one invocation that ran for d (its initialisation included,
// for a cold start).
func (c *LambdaCost) Add(d time.Duration) {
	c.Invocations++
	c.Billed += LambdaBilledDuration(d)
}

// GBSeconds is the compute billed at memoryMB.
func (c LambdaCost) GBSeconds(memoryMB int) float64 { return LambdaGBSeconds(c.Billed, memoryMB) }

// Dollars is what the invocations cost on arm64 at memoryMB: the request
// charge and the duration charge at the list prices above.
func (c LambdaCost) Dollars(memoryMB int) float64 {
	return float64(c.Invocations)*LambdaRequestPrice + c.GBSeconds(memoryMB)*LambdaARMGBSecondPrice
}

// String describes c for logs.
func (c LambdaCost) String() string {
	return fmt.Sprintf("%d invocations, %v billed", c.Invocations, c.Billed)
}
