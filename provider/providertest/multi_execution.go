package providertest

// multiExecutionTests returns the MultiExecution category.
func multiExecutionTests() []testCase {
	return nil
}
