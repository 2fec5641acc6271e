package providertest

// capabilityFilteringTests returns the CapabilityFiltering category.
func capabilityFilteringTests() []testCase {
	return nil
}
