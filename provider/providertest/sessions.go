package providertest

// sessionsTests returns the Sessions category.
func sessionsTests() []testCase {
	return nil
}
