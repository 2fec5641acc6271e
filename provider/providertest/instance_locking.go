package providertest

// instanceLockingTests returns the InstanceLocking category.
func instanceLockingTests() []testCase {
	return nil
}
