package providertest

// bulkDeletionTests returns the BulkDeletion category.
func bulkDeletionTests() []testCase {
	return nil
}
