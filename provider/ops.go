package provider

// Operation names: the values of [Error.Op], one per contract method, in the
// contract's snake_case spelling, so that errors and logs name an operation
// the same way in every implementation.
const (
	// OpFetchOrchestrationItem names [Provider.FetchOrchestrationItem].
	OpFetchOrchestrationItem = "fetch_orchestration_item"
	// OpAckOrchestrationItem names [Provider.AckOrchestrationItem].
	OpAckOrchestrationItem = "ack_orchestration_item"
	// OpAbandonOrchestrationItem names [Provider.AbandonOrchestrationItem].
	OpAbandonOrchestrationItem = "abandon_orchestration_item"
	// OpRenewOrchestrationItemLock names
	// [Provider.RenewOrchestrationItemLock].
	OpRenewOrchestrationItemLock = "renew_orchestration_item_lock"
	// OpRead names [Provider.Read].
	OpRead = "read"
	// OpReadWithExecution names [Provider.ReadWithExecution].
	OpReadWithExecution = "read_with_execution"
	// OpAppendWithExecution names [Provider.AppendWithExecution].
	OpAppendWithExecution = "append_with_execution"
	// OpEnqueueForWorker names [Provider.EnqueueForWorker].
	OpEnqueueForWorker = "enqueue_for_worker"
	// OpFetchWorkItem names [Provider.FetchWorkItem].
	OpFetchWorkItem = "fetch_work_item"
	// OpAckWorkItem names [Provider.AckWorkItem].
	OpAckWorkItem = "ack_work_item"
	// OpRenewWorkItemLock names [Provider.RenewWorkItemLock].
	OpRenewWorkItemLock = "renew_work_item_lock"
	// OpAbandonWorkItem names [Provider.AbandonWorkItem].
	OpAbandonWorkItem = "abandon_work_item"
	// OpRenewSessionLock names [Provider.RenewSessionLock].
	OpRenewSessionLock = "renew_session_lock"
	// OpCleanupOrphanedSessions names [Provider.CleanupOrphanedSessions].
	OpCleanupOrphanedSessions = "cleanup_orphaned_sessions"
	// OpEnqueueForOrchestrator names [Provider.EnqueueForOrchestrator].
	OpEnqueueForOrchestrator = "enqueue_for_orchestrator"
	// OpCustomStatus names [Provider.CustomStatus].
	OpCustomStatus = "get_custom_status"
	// OpKVValue names [Provider.KVValue].
	OpKVValue = "get_kv_value"
	// OpKVValues names [Provider.KVValues].
	OpKVValues = "get_kv_all_values"
	// OpInstanceStats names [Provider.InstanceStats].
	OpInstanceStats = "get_instance_stats"
)

// Operation names of the management capability ([Admin]) and of the
// helpers built on it.
const (
	// OpListInstances names [Admin.ListInstances].
	OpListInstances = "list_instances"
	// OpListInstancesByStatus names [Admin.ListInstancesByStatus].
	OpListInstancesByStatus = "list_instances_by_status"
	// OpListExecutions names [Admin.ListExecutions].
	OpListExecutions = "list_executions"
	// OpReadHistoryWithExecutionID names [Admin.ReadHistoryWithExecutionID].
	OpReadHistoryWithExecutionID = "read_history_with_execution_id"
	// OpReadHistory names [Admin.ReadHistory].
	OpReadHistory = "read_history"
	// OpLatestExecutionID names [Admin.LatestExecutionID].
	OpLatestExecutionID = "latest_execution_id"
	// OpInstanceInfo names [Admin.InstanceInfo].
	OpInstanceInfo = "get_instance_info"
	// OpInstanceStatus names [StatusReader.InstanceStatus].
	OpInstanceStatus = "get_instance_status"
	// OpExecutionInfo names [Admin.ExecutionInfo].
	OpExecutionInfo = "get_execution_info"
	// OpSystemMetrics names [Admin.SystemMetrics].
	OpSystemMetrics = "get_system_metrics"
	// OpQueueDepths names [Admin.QueueDepths].
	OpQueueDepths = "get_queue_depths"
	// OpListChildren names [Admin.ListChildren].
	OpListChildren = "list_children"
	// OpParentID names [Admin.ParentID].
	OpParentID = "get_parent_id"
	// OpDeleteInstancesAtomic names [Admin.DeleteInstancesAtomic].
	OpDeleteInstancesAtomic = "delete_instances_atomic"
	// OpDeleteInstanceBulk names [Admin.DeleteInstanceBulk].
	OpDeleteInstanceBulk = "delete_instance_bulk"
	// OpPruneExecutions names [Admin.PruneExecutions].
	OpPruneExecutions = "prune_executions"
	// OpPruneExecutionsBulk names [Admin.PruneExecutionsBulk].
	OpPruneExecutionsBulk = "prune_executions_bulk"
	// OpDeleteInstance names [DeleteInstance].
	OpDeleteInstance = "delete_instance"
)
