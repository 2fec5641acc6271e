package providertest

// pruneTests returns the Prune category.
func pruneTests() []testCase {
	return nil
}
