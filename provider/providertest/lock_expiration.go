package providertest

// lockExpirationTests returns the LockExpiration category.
func lockExpirationTests() []testCase {
	return nil
}
