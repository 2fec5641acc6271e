package providertest

// longPollingTests returns the LongPolling category.
func longPollingTests() []testCase {
	return nil
}
