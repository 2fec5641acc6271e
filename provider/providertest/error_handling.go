package providertest

// errorHandlingTests returns the ErrorHandling category.
func errorHandlingTests() []testCase {
	return nil
}
