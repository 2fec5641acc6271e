package locks

// WithShards spreads a test's holders over n index partitions instead of
// LockShards, so that List makes fewer queries on an emulator that
// parallel tests share.
func WithShards(n int) func(*DynamoOptions) {
	return func(o *DynamoOptions) { o.shards = n }
}
