package providertest

// inputValidationTests returns the InputValidation category.
func inputValidationTests() []testCase {
	return nil
}
