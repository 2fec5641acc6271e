package providertest

// poisonMessageTests returns the PoisonMessage category.
func poisonMessageTests() []testCase {
	return nil
}
