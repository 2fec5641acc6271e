package report

import (
	"math"
	"slices"
	"time"
)

// Percentile returns the p-th percentile (0 < p ≤ 100) of latencies by the
// nearest-rank method: the smallest value such that at least p percent of
// the values are less than or equal to it, that is the value of rank
// ⌈p/100 × n⌉ (1-based) in ascending order. It never interpolates, so the
// result is always one of the measured values. It returns 0 when latencies
// is empty; p ≤ 0 gives the smallest value and p > 100 the largest.
// latencies is not modified.
func Percentile(latencies []time.Duration, p float64) time.Duration {
	n := len(latencies)
	if n == 0 {
		return 0
	}
	sorted := slices.Clone(latencies)
	slices.Sort(sorted)
	// p×n before the division keeps the product exact for the usual whole
	// percentiles, so that for example p99 of 100 values is rank 99.
	rank := int(math.Ceil(p * float64(n) / 100))
	rank = min(max(rank, 1), n)
	return sorted[rank-1]
}

// Latency returns the p-th percentile of r.Latencies by nearest rank (see
// [Percentile]); 0 when there are none.
func (r Result) Latency(p float64) time.Duration { return Percentile(r.Latencies, p) }

// ActivitiesPerSecond returns Activities divided by Elapsed in seconds; 0
// when either is zero.
func (r Result) ActivitiesPerSecond() float64 {
	if r.Activities == 0 || r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Activities) / r.Elapsed.Seconds()
}

// DynamoDBRequests returns the number of DynamoDB requests of all
// operations.
func (r Result) DynamoDBRequests() int { return sum(r.DynamoDB) }

// SQSRequests returns the number of SQS requests of all operations.
func (r Result) SQSRequests() int { return sum(r.SQS) }

// PerActivity returns v divided by Activities; 0 when no activity
// completed.
func (r Result) PerActivity(v float64) float64 {
	if r.Activities == 0 {
		return 0
	}
	return v / float64(r.Activities)
}

func sum(counts map[string]int) int {
	total := 0
	for _, n := range counts {
		total += n
	}
	return total
}
