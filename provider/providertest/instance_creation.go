package providertest

// instanceCreationTests returns the InstanceCreation category.
func instanceCreationTests() []testCase {
	return nil
}
