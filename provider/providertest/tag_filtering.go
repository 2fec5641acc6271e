package providertest

// tagFilteringTests returns the TagFiltering category.
func tagFilteringTests() []testCase {
	return nil
}
