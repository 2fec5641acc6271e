package providertest

// cancellationTests returns the Cancellation category.
func cancellationTests() []testCase {
	return nil
}
