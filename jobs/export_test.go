package jobs

// WithShards spreads a test's jobs over n index partitions instead of
// JobShards: fewer queries per listing on an emulator that parallel tests
// share, or one partition to fill index pages.
func WithShards(n int) func(*DynamoOptions) {
	return func(o *DynamoOptions) { o.shards = n }
}
