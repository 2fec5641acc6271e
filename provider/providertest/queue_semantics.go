package providertest

// queueSemanticsTests returns the QueueSemantics category.
func queueSemanticsTests() []testCase {
	return nil
}
