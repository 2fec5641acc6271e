package providertest

// customStatusTests returns the CustomStatus category.
func customStatusTests() []testCase {
	return nil
}
