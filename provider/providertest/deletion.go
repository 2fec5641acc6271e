package providertest

// deletionTests returns the Deletion category.
func deletionTests() []testCase {
	return nil
}
