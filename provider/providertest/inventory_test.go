package providertest

import (
	"regexp"
	"slices"
	"testing"
)

// contractTests lists, per category, the Go names of the tests of
// duroxide's provider validation suite (contract §3.3), in duroxide's
// order: duroxide's test_lock_expires_after_timeout is
// LockExpiration/LockExpiresAfterTimeout. The suite must run exactly these
// as its ports: a lost, merged or renamed test makes the inventory tests
// fail. duradyn's own tests are listed apart, in additions.
var contractTests = map[string][]string{
	"Atomicity": {
		"AtomicityFailureRollback", "MultiOperationAtomicAck", "LockReleasedOnlyOnSuccessfulAck",
		"ConcurrentAckPrevention",
	},
	"BulkDeletion": {
		"DeleteInstanceBulkFilterCombinations", "DeleteInstanceBulkSafetyAndLimits",
		"DeleteInstanceBulkCompletedBeforeFilter", "DeleteInstanceBulkCascadesToChildren",
	},
	"Cancellation": {
		"FetchReturnsRunningStateForActiveOrchestration",
		"FetchReturnsTerminalStateWhenOrchestrationCompleted",
		"FetchReturnsTerminalStateWhenOrchestrationFailed",
		"FetchReturnsTerminalStateWhenOrchestrationContinuedAsNew",
		"FetchReturnsMissingStateWhenInstanceDeleted", "RenewReturnsRunningWhenOrchestrationActive",
		"RenewReturnsTerminalWhenOrchestrationCompleted", "RenewReturnsMissingWhenInstanceDeleted",
		"AckWorkItemNoneDeletesWithoutEnqueue", "CancelledActivitiesDeletedFromWorkerQueue",
		"AckWorkItemFailsWhenEntryDeleted", "RenewFailsWhenEntryDeleted",
		"CancellingNonexistentActivitiesIsIdempotent", "BatchCancellationDeletesMultipleActivities",
		"SameActivityInWorkerItemsAndCancelledIsNoop", "OrphanActivityAfterInstanceForceDeletion",
	},
	"CapabilityFiltering": {
		"FetchWithFilterNoneReturnsAnyItem", "FetchWithCompatibleFilterReturnsItem",
		"FetchWithIncompatibleFilterSkipsItem", "FetchFilterSkipsIncompatibleSelectsCompatible",
		"FetchFilterDoesNotLockSkippedInstances", "FetchFilterNullPinnedVersionAlwaysCompatible",
		"FetchFilterBoundaryVersions", "PinnedVersionStoredViaAckMetadata",
		"PinnedVersionImmutableAcrossAckCycles", "ContinueAsNewExecutionGetsOwnPinnedVersion",
		"FilterWithEmptySupportedVersionsReturnsNothing", "ConcurrentFilteredFetchNoDoubleLock",
		"AckStoresPinnedVersionViaMetadataUpdate", "ProviderUpdatesPinnedVersionWhenTold",
		"FetchCorruptedHistoryFilteredVsUnfiltered", "FetchDeserializationErrorIncrementsAttemptCount",
		"FetchDeserializationErrorEventuallyReachesPoison",
		"FetchFilterAppliedBeforeHistoryDeserialization", "FetchSingleRangeOnlyUsesFirstRange",
		"AckAppendsEventToCorruptedHistory",
	},
	"CustomStatus": {
		"CustomStatusSet", "CustomStatusClear", "CustomStatusNonePreserves",
		"CustomStatusVersionIncrements", "CustomStatusPollingNoChange",
		"CustomStatusNonexistentInstance", "CustomStatusDefaultOnNewInstance",
	},
	"Deletion": {
		"DeleteTerminalInstances", "DeleteRunningRejectedForceSucceeds", "DeleteNonexistentInstance",
		"DeleteCleansQueuesAndLocks", "CascadeDeleteHierarchy", "ForceDeletePreventsAckRecreation",
		"ListChildren", "DeleteGetParentID", "DeleteGetInstanceTree", "DeleteInstancesAtomic",
		"DeleteInstancesAtomicForce", "DeleteInstancesAtomicOrphanDetection",
		"StaleActivityAfterDeleteRecreate",
	},
	"ErrorHandling": {
		"InvalidLockTokenOnAck", "DuplicateEventIDRejection", "MissingInstanceMetadata",
		"CorruptedSerializationData", "LockExpirationDuringAck", "ReadCorruptedHistoryReturnsError",
		"ReadWithExecutionCorruptedHistoryReturnsError",
	},
	"InstanceCreation": {
		"InstanceCreationViaMetadata", "NoInstanceCreationOnEnqueue", "NullVersionHandling",
		"SubOrchestrationInstanceCreation",
	},
	"InstanceLocking": {
		"ExclusiveInstanceLock", "LockTokenUniqueness", "InvalidLockTokenRejection",
		"ConcurrentInstanceFetching", "CompletionsArrivingDuringLockBlocked",
		"CrossInstanceLockIsolation", "MessageTaggingDuringLock", "AckOnlyAffectsLockedMessages",
		"MultiThreadedLockContention", "MultiThreadedNoDuplicateProcessing",
		"MultiThreadedLockExpirationRecovery",
	},
	"KVStore": {
		"KVSetAndGet", "KVOverwrite", "KVClearSingle", "KVClearAll", "KVGetNonexistent",
		"KVSnapshotInFetch", "KVSnapshotAfterClearSingle", "KVSnapshotAfterClearAll",
		"KVExecutionIDTracking", "KVCrossExecutionOverwrite", "KVCrossExecutionRemoveReadd",
		"KVPrunePreservesOverwritten", "KVPrunePreservesAllKeys", "KVInstanceIsolation",
		"KVDeleteInstanceCascades", "KVClearNonexistentKey", "KVGetUnknownInstance", "KVSetAfterClear",
		"KVEmptyValue", "KVLargeValue", "KVSpecialCharsInKey", "KVSnapshotEmpty",
		"KVSnapshotCrossExecution", "KVPruneCurrentExecutionProtected", "KVDeleteInstanceWithChildren",
		"KVClearIsolation", "KVDeltaSnapshotExcludesCurrentExecution",
		"KVDeltaSnapshotIncludesCompletedExecution", "KVDeltaClientReadsMerged",
		"KVDeltaTombstoneOverridesStore", "KVDeltaClearAllTombstonesStore", "KVDeltaMergedOnCompletion",
		"KVDeltaMergedOnCAN", "KVDeltaDeleteInstanceCascades", "KVDeltaPruneUntouchedKeySurvives",
	},
	"LockExpiration": {
		"LockExpiresAfterTimeout", "AbandonReleasesLockImmediately", "LockRenewalOnAck",
		"ConcurrentLockAttemptsRespectExpiration", "WorkerLockRenewalSuccess",
		"WorkerLockRenewalInvalidToken", "WorkerLockRenewalAfterExpiration",
		"WorkerLockRenewalExtendsTimeout", "WorkerLockRenewalAfterAck", "AbandonWorkItemReleasesLock",
		"AbandonWorkItemWithDelay", "WorkerAckFailsAfterLockExpiry",
		"OrchestrationLockRenewalAfterExpiration",
	},
	"LongPolling": {
		"ShortPollReturnsImmediately", "LongPollWaitsForTimeout", "FetchRespectsTimeoutUpperBound",
		"ShortPollWorkItemReturnsImmediately", "LongPollWorkItemWaitsForTimeout",
	},
	"Management": {
		"ListInstances", "ListInstancesByStatus", "ListExecutions", "GetInstanceInfo",
		"GetExecutionInfo", "GetSystemMetrics", "GetQueueDepths", "GetInstanceStatsNonexistent",
		"GetInstanceStatsHistory", "GetInstanceStatsKV", "GetInstanceStatsCarryForward",
		"GetInstanceStatsKVDeltaOnly", "GetInstanceStatsKVMerged",
	},
	"MultiExecution": {
		"ExecutionIsolation", "LatestExecutionDetection", "ExecutionIDSequencing",
		"ContinueAsNewCreatesNewExecution", "ExecutionHistoryPersistence",
	},
	"PoisonMessage": {
		"OrchestrationAttemptCountStartsAtOne", "OrchestrationAttemptCountIncrementsOnRefetch",
		"WorkerAttemptCountStartsAtOne", "WorkerAttemptCountIncrementsOnLockExpiry",
		"AttemptCountIsPerMessage", "AbandonWorkItemIgnoreAttemptDecrements",
		"AbandonOrchestrationItemIgnoreAttemptDecrements", "IgnoreAttemptNeverGoesNegative",
		"MaxAttemptCountAcrossMessageBatch",
	},
	"Prune": {
		"PruneOptionsCombinations", "PruneSafety", "PruneBulk", "PruneBulkIncludesRunningInstances",
	},
	"QueueSemantics": {
		"WorkerQueueFIFOOrdering", "WorkerPeekLockSemantics", "WorkerAckAtomicity",
		"TimerDelayedVisibility", "LostLockTokenHandling", "WorkerItemImmediateVisibility",
		"WorkerDelayedVisibilitySkipsFutureItems", "OrphanQueueMessagesDropped",
	},
	"Sessions": {
		"NonSessionItemsFetchableByAnyWorker", "SessionItemClaimableWhenNoSession",
		"SessionAffinitySameWorker", "SessionAffinityBlocksOtherWorker",
		"DifferentSessionsDifferentWorkers", "MixedSessionAndNonSessionItems",
		"SessionClaimableAfterLockExpiry", "NoneSessionSkipsSessionItems", "SomeSessionReturnsAllItems",
		"RenewSessionLockActive", "RenewSessionLockSkipsIdle", "RenewSessionLockNoSessions",
		"CleanupRemovesExpiredNoItems", "CleanupKeepsSessionsWithPendingItems",
		"CleanupKeepsActiveSessions", "AckUpdatesSessionLastActivity",
		"RenewWorkItemUpdatesSessionLastActivity", "SessionItemsProcessedInOrder",
		"NonSessionItemsReturnedWithSessionConfig", "SharedWorkerIDAnyCallerCanFetchOwnedSession",
		"ConcurrentSessionClaimOnlyOneWins", "SessionTakeoverAfterLockExpiry",
		"CleanupThenNewItemRecreatesSession", "AbandonedSessionItemRetryable",
		"AbandonedSessionItemIgnoreAttempt", "RenewSessionLockAfterExpiryReturnsZero",
		"OriginalWorkerReclaimsExpiredSession", "ActivityLockExpiresSessionLockValidSameWorkerRefetches",
		"SessionLockExpiresNewOwnerGetsRedelivery", "SessionLockExpiresSameWorkerReacquires",
		"BothLocksExpireDifferentWorkerClaims", "SessionLockExpiresActivityLockValidAckSucceeds",
		"SessionLockRenewalExtendsPastOriginalTimeout",
	},
	"TagFiltering": {
		"DefaultOnlyFetchesUntagged", "TagsFetchesOnlyMatching", "DefaultAndFetchesUntaggedAndMatching",
		"NoneFilterReturnsNothing", "MultiTagFilter", "TagRoundTripPreservation",
		"AnyFilterFetchesEverything", "TagSurvivesAbandonAndRefetch", "MultiRuntimeTagIsolation",
		"TagPreservedThroughAckOrchestrationItem",
	},
}

// contractCounts is the number of tests per category in duroxide's provider
// validation suite (contract §3.4), 221 in all.
var contractCounts = map[string]int{
	"Atomicity":           4,
	"BulkDeletion":        4,
	"Cancellation":        16,
	"CapabilityFiltering": 20,
	"CustomStatus":        7,
	"Deletion":            13,
	"ErrorHandling":       7,
	"InstanceCreation":    4,
	"InstanceLocking":     11,
	"KVStore":             35,
	"LockExpiration":      13,
	"LongPolling":         5,
	"Management":          13,
	"MultiExecution":      5,
	"PoisonMessage":       9,
	"Prune":               4,
	"QueueSemantics":      8,
	"Sessions":            33,
	"TagFiltering":        10,
}

// additions lists duradyn's own tests per category: checks duroxide's
// suite does not make (gaps a broken provider passes through, see
// TestSuiteCatchesBrokenProviders) and the InputValidation category.
var additions = map[string][]string{
	"KVStore": {
		"KVClearInNextExecutionDeletesStoredKey", "KVClearAllInNextExecutionDeletesStoredKeys",
		"KVSnapshotAfterClearAllCompleted",
	},
	"LockExpiration": {
		"OrchestrationLockRenewalExtendsLock", "OrchestrationLockHeldLateInLease",
		"AbandonOrchestrationItemWithDelay",
	},
	"Management":     {"AdminHistoryReads", "PendingInstance", "InstanceStatus"},
	"QueueSemantics": {"TimerFromAckInvisibleUntilFireAt"},
	"InputValidation": {
		"AckRejectsEventIDZero", "AckRejectsDuplicateEventIDInDelta",
		"AckRejectsActivityExecuteOnOrchestratorQueue", "EnqueueForOrchestratorRejectsActivityExecute",
		"AckWorkItemRejectsNonCompletion", "AppendRejectsEventIDZero", "AppendRejectsDuplicateEventID",
		"HostileInstanceIDsStayDistinct", "HostileKVKeysStayDistinct", "HostileTagsAndSessionsStayDistinct",
	},
}

// names returns the names of tests, in order.
func names(tests []testCase) []string {
	out := make([]string, len(tests))
	for i, tc := range tests {
		out[i] = tc.name
	}
	return out
}

func TestInventoryMatchesContract(t *testing.T) {
	total := 0
	seen := map[string]bool{}
	for _, c := range categories() {
		seen[c.name] = true
		want, isContract := contractTests[c.name]
		_, isOwn := additions[c.name]
		if !isContract && !isOwn {
			t.Errorf("category %s is neither a contract category nor one of duradyn's own", c.name)
			continue
		}
		if got := names(c.tests); !slices.Equal(got, want) {
			t.Errorf("category %s runs the ports %q, contract §3.3 lists %q", c.name, got, want)
		}
		if isContract && len(c.tests) != contractCounts[c.name] {
			t.Errorf("category %s has %d ports, contract §3.4 lists %d", c.name, len(c.tests), contractCounts[c.name])
		}
		total += len(c.tests)
		if got, want := names(c.additions), additions[c.name]; !slices.Equal(got, want) {
			t.Errorf("category %s runs the additions %q, the inventory lists %q", c.name, got, want)
		}
	}
	for name := range contractTests {
		if !seen[name] {
			t.Errorf("contract category %s is missing from the suite", name)
		}
		if len(contractTests[name]) != contractCounts[name] {
			t.Errorf("the inventory lists %d tests of %s, contract §3.4 counts %d", len(contractTests[name]), name, contractCounts[name])
		}
	}
	for name := range additions {
		if !seen[name] {
			t.Errorf("category %s of the additions is missing from the suite", name)
		}
	}
	if len(contractCounts) != 19 || total != 221 {
		t.Errorf("suite covers %d contract tests in %d categories, want 221 in 19", total, len(contractCounts))
	}
}

func TestInventoryNamesAreUniqueAndGoStyle(t *testing.T) {
	goName := regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)
	for _, c := range categories() {
		names := map[string]bool{}
		for _, tc := range slices.Concat(c.tests, c.additions) {
			if !goName.MatchString(tc.name) {
				t.Errorf("%s/%s: test names are CamelCase Go identifiers", c.name, tc.name)
			}
			if names[tc.name] {
				t.Errorf("%s/%s: duplicate test name", c.name, tc.name)
			}
			if tc.run == nil {
				t.Errorf("%s/%s: no test function", c.name, tc.name)
			}
			names[tc.name] = true
		}
	}
}
