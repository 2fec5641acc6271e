package providertest

// atomicityTests returns the Atomicity category.
func atomicityTests() []testCase {
	return nil
}
