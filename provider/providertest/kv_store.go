package providertest

// kvStoreTests returns the KVStore category.
func kvStoreTests() []testCase {
	return nil
}
