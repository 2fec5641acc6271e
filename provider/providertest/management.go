package providertest

// managementTests returns the Management category.
func managementTests() []testCase {
	return nil
}
