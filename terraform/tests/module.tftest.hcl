# Plans the module against a mocked AWS provider: no credentials, no network.
# Run with `terraform test` in terraform/ (scripts/tf-validate does).

mock_provider "aws" {
  mock_resource "aws_dynamodb_table" {
    defaults = {
      arn = "arn:aws:dynamodb:eu-west-1:123456789012:table/duradyn"
    }
  }
}

variables {
  table_name = "duradyn"
}

run "defaults" {
  command = plan

  assert {
    condition     = aws_dynamodb_table.this[0].billing_mode == "PAY_PER_REQUEST"
    error_message = "The table must be on demand by default."
  }

  assert {
    condition     = aws_dynamodb_table.this[0].hash_key == "pk" && aws_dynamodb_table.this[0].range_key == "sk"
    error_message = "The table keys must be pk and sk."
  }

  assert {
    condition = { for a in aws_dynamodb_table.this[0].attribute : a.name => a.type } == {
      pk = "S", sk = "S", rq_pk = "S", rq_sk = "S", li_pk = "S", li_sk = "S"
    }
    error_message = "The key attributes must be pk, sk, rq_pk, rq_sk, li_pk and li_sk, all strings."
  }

  assert {
    # schema.json is checked against tables.Default by scripts/tf-validate;
    # here the rendered indexes must match it.
    condition = jsonencode({ for ix in aws_dynamodb_table.this[0].global_secondary_index : ix.name => [ix.hash_key, ix.range_key, ix.projection_type, sort(ix.non_key_attributes)] }) == jsonencode({
      for ix in jsondecode(file("${path.module}/schema.json")).global_secondary_indexes : ix.name => [ix.partition_key.name, ix.sort_key.name, ix.projection_type, sort(ix.non_key_attributes)]
    })
    error_message = "The global secondary indexes must be ready and instances as in schema.json (tables.Default)."
  }

  assert {
    condition     = aws_dynamodb_table.this[0].ttl[0].enabled && aws_dynamodb_table.this[0].ttl[0].attribute_name == "expires_at"
    error_message = "Time to live must be enabled on expires_at."
  }

  assert {
    condition     = aws_dynamodb_table.this[0].point_in_time_recovery[0].enabled && aws_dynamodb_table.this[0].deletion_protection_enabled
    error_message = "Point-in-time recovery and deletion protection must be on by default."
  }

  assert {
    condition     = keys(aws_sqs_queue.this) == ["orchestrator", "worker"] && aws_sqs_queue.this["orchestrator"].name == "duradyn-orchestrator" && aws_sqs_queue.this["worker"].name == "duradyn-worker"
    error_message = "The module must create the orchestrator and worker queues named after the table."
  }

  assert {
    condition = alltrue([for q in aws_sqs_queue.this :
      q.receive_wait_time_seconds == 0 && q.message_retention_seconds == 300 && q.sqs_managed_sse_enabled
    ])
    error_message = "The queues must have wait time 0, 5-minute retention and SSE-SQS."
  }

  assert {
    condition     = length(aws_iam_policy.this) == 0
    error_message = "No IAM policy is created by default."
  }

  assert {
    condition     = length(aws_dynamodb_table.this) == 1 && length(aws_dynamodb_table.autoscaled) == 0 && length(aws_appautoscaling_target.this) == 0 && length(aws_appautoscaling_policy.this) == 0
    error_message = "By default the table is aws_dynamodb_table.this and nothing is auto scaled."
  }
}

run "provisioned" {
  command = plan

  variables {
    billing_mode = "PROVISIONED"
    provisioned_capacity = {
      table     = { read = 5, write = 5 }
      ready     = { read = 2, write = 3 }
      instances = { read = 1, write = 1 }
    }
    table_kms_key_arn = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    queue_kms_key_arn = "arn:aws:kms:eu-west-1:123456789012:key/5678abcd-12ab-34cd-56ef-1234567890ab"
    create_iam_policy = true
  }

  assert {
    condition     = aws_dynamodb_table.this[0].read_capacity == 5 && aws_dynamodb_table.this[0].write_capacity == 5
    error_message = "The table capacity must come from provisioned_capacity.table."
  }

  assert {
    condition = { for ix in aws_dynamodb_table.this[0].global_secondary_index : ix.name => [ix.read_capacity, ix.write_capacity] } == {
      ready = [2, 3], instances = [1, 1]
    }
    error_message = "Each index's capacity must come from provisioned_capacity."
  }

  assert {
    condition     = aws_dynamodb_table.this[0].server_side_encryption[0].enabled && aws_dynamodb_table.this[0].server_side_encryption[0].kms_key_arn == var.table_kms_key_arn
    error_message = "The table must be encrypted with the given KMS key."
  }

  assert {
    condition     = alltrue([for q in aws_sqs_queue.this : q.kms_master_key_id == var.queue_kms_key_arn])
    error_message = "The queues must be encrypted with the given KMS key."
  }

  assert {
    condition     = length(aws_iam_policy.this) == 1
    error_message = "create_iam_policy must create the policy."
  }

  assert {
    condition     = length(aws_dynamodb_table.this) == 1 && length(aws_dynamodb_table.autoscaled) == 0 && length(aws_appautoscaling_target.this) == 0 && length(aws_appautoscaling_policy.this) == 0
    error_message = "Provisioned capacity without autoscaling must keep aws_dynamodb_table.this and create no auto scaling."
  }
}

run "create_false" {
  command = plan

  variables {
    create = false
  }

  assert {
    condition     = length(aws_dynamodb_table.this) == 0 && length(aws_sqs_queue.this) == 0 && output.table_name == null && output.iam_policy_json == null
    error_message = "create = false must create nothing and output nulls."
  }
}

run "create_false_with_autoscaling" {
  command = plan

  variables {
    create       = false
    billing_mode = "PROVISIONED"
    provisioned_capacity = {
      table     = { read = 5, write = 5 }
      ready     = { read = 5, write = 5 }
      instances = { read = 5, write = 5 }
    }
    autoscaling = {
      table     = { read = { max = 50 }, write = { max = 50 } }
      ready     = { read = { max = 50 }, write = { max = 50 } }
      instances = { read = { max = 50 }, write = { max = 50 } }
    }
  }

  assert {
    condition     = length(aws_dynamodb_table.this) == 0 && length(aws_dynamodb_table.autoscaled) == 0 && length(aws_appautoscaling_target.this) == 0 && length(aws_appautoscaling_policy.this) == 0 && output.table_name == null && output.table_index_arns == null
    error_message = "create = false must create nothing, auto scaling included."
  }
}

run "autoscaling" {
  command = plan

  variables {
    billing_mode = "PROVISIONED"
    provisioned_capacity = {
      table     = { read = 5, write = 4 }
      ready     = { read = 2, write = 3 }
      instances = { read = 1, write = 2 }
    }
    # Some minimums left out (provisioned_capacity), some given, each
    # different from its provisioned_capacity figure.
    autoscaling = {
      table     = { read = { max = 100 }, write = { min = 2, max = 50 } }
      ready     = { read = { min = 3, max = 30 }, write = { max = 60 } }
      instances = { read = { max = 10 }, write = { min = 1, max = 20 } }
    }
  }

  assert {
    condition     = length(aws_dynamodb_table.this) == 0 && length(aws_dynamodb_table.autoscaled) == 1
    error_message = "With autoscaling the table must be aws_dynamodb_table.autoscaled (capacities ignored), not aws_dynamodb_table.this."
  }

  assert {
    condition     = output.table_name == "duradyn"
    error_message = "The table_name output must come from aws_dynamodb_table.autoscaled."
  }

  assert {
    condition     = aws_dynamodb_table.autoscaled[0].name == "duradyn" && aws_dynamodb_table.autoscaled[0].billing_mode == "PROVISIONED" && aws_dynamodb_table.autoscaled[0].hash_key == "pk" && aws_dynamodb_table.autoscaled[0].range_key == "sk"
    error_message = "The autoscaled table must have the name, billing mode and keys of the table."
  }

  assert {
    condition = { for a in aws_dynamodb_table.autoscaled[0].attribute : a.name => a.type } == {
      pk = "S", sk = "S", rq_pk = "S", rq_sk = "S", li_pk = "S", li_sk = "S"
    }
    error_message = "The autoscaled table's key attributes must be pk, sk, rq_pk, rq_sk, li_pk and li_sk, all strings."
  }

  assert {
    condition = jsonencode({ for ix in aws_dynamodb_table.autoscaled[0].global_secondary_index : ix.name => [ix.hash_key, ix.range_key, ix.projection_type, sort(ix.non_key_attributes)] }) == jsonencode({
      for ix in jsondecode(file("${path.module}/schema.json")).global_secondary_indexes : ix.name => [ix.partition_key.name, ix.sort_key.name, ix.projection_type, sort(ix.non_key_attributes)]
    })
    error_message = "The autoscaled table's indexes must be ready and instances as in schema.json (tables.Default)."
  }

  assert {
    condition     = aws_dynamodb_table.autoscaled[0].ttl[0].enabled && aws_dynamodb_table.autoscaled[0].ttl[0].attribute_name == "expires_at" && aws_dynamodb_table.autoscaled[0].point_in_time_recovery[0].enabled && aws_dynamodb_table.autoscaled[0].deletion_protection_enabled && !aws_dynamodb_table.autoscaled[0].server_side_encryption[0].enabled
    error_message = "The autoscaled table must have time to live on expires_at, point-in-time recovery, deletion protection and the default encryption."
  }

  assert {
    # The table is created with provisioned_capacity; auto scaling takes
    # over from there.
    condition = jsonencode({
      table   = [aws_dynamodb_table.autoscaled[0].read_capacity, aws_dynamodb_table.autoscaled[0].write_capacity]
      indexes = { for ix in aws_dynamodb_table.autoscaled[0].global_secondary_index : ix.name => [ix.read_capacity, ix.write_capacity] }
      }) == jsonencode({
      table   = [5, 4]
      indexes = { ready = [2, 3], instances = [1, 2] }
    })
    error_message = "The autoscaled table must be created with the capacities of provisioned_capacity."
  }

  assert {
    condition = jsonencode({ for k, t in aws_appautoscaling_target.this : k => [t.service_namespace, t.resource_id, t.scalable_dimension, t.min_capacity, t.max_capacity] }) == jsonencode({
      "table-read"      = ["dynamodb", "table/duradyn", "dynamodb:table:ReadCapacityUnits", 5, 100]
      "table-write"     = ["dynamodb", "table/duradyn", "dynamodb:table:WriteCapacityUnits", 2, 50]
      "ready-read"      = ["dynamodb", "table/duradyn/index/ready", "dynamodb:index:ReadCapacityUnits", 3, 30]
      "ready-write"     = ["dynamodb", "table/duradyn/index/ready", "dynamodb:index:WriteCapacityUnits", 3, 60]
      "instances-read"  = ["dynamodb", "table/duradyn/index/instances", "dynamodb:index:ReadCapacityUnits", 1, 10]
      "instances-write" = ["dynamodb", "table/duradyn/index/instances", "dynamodb:index:WriteCapacityUnits", 1, 20]
    })
    error_message = "Unexpected scalable targets: ${jsonencode({ for k, t in aws_appautoscaling_target.this : k => [t.resource_id, t.scalable_dimension, t.min_capacity, t.max_capacity] })}"
  }

  assert {
    condition = jsonencode({ for k, p in aws_appautoscaling_policy.this : k => [
      p.name, p.policy_type, p.service_namespace, p.resource_id, p.scalable_dimension,
      p.target_tracking_scaling_policy_configuration[0].predefined_metric_specification[0].predefined_metric_type,
      p.target_tracking_scaling_policy_configuration[0].target_value,
      p.target_tracking_scaling_policy_configuration[0].scale_in_cooldown,
      p.target_tracking_scaling_policy_configuration[0].scale_out_cooldown,
      ] }) == jsonencode({
      "table-read"      = ["duradyn-table-read", "TargetTrackingScaling", "dynamodb", "table/duradyn", "dynamodb:table:ReadCapacityUnits", "DynamoDBReadCapacityUtilization", 70, 0, 0]
      "table-write"     = ["duradyn-table-write", "TargetTrackingScaling", "dynamodb", "table/duradyn", "dynamodb:table:WriteCapacityUnits", "DynamoDBWriteCapacityUtilization", 70, 0, 0]
      "ready-read"      = ["duradyn-ready-read", "TargetTrackingScaling", "dynamodb", "table/duradyn/index/ready", "dynamodb:index:ReadCapacityUnits", "DynamoDBReadCapacityUtilization", 70, 0, 0]
      "ready-write"     = ["duradyn-ready-write", "TargetTrackingScaling", "dynamodb", "table/duradyn/index/ready", "dynamodb:index:WriteCapacityUnits", "DynamoDBWriteCapacityUtilization", 70, 0, 0]
      "instances-read"  = ["duradyn-instances-read", "TargetTrackingScaling", "dynamodb", "table/duradyn/index/instances", "dynamodb:index:ReadCapacityUnits", "DynamoDBReadCapacityUtilization", 70, 0, 0]
      "instances-write" = ["duradyn-instances-write", "TargetTrackingScaling", "dynamodb", "table/duradyn/index/instances", "dynamodb:index:WriteCapacityUnits", "DynamoDBWriteCapacityUtilization", 70, 0, 0]
    })
    error_message = "Unexpected scaling policies."
  }
}

run "autoscaling_settings" {
  command = plan

  variables {
    billing_mode = "PROVISIONED"
    provisioned_capacity = {
      table     = { read = 5, write = 5 }
      ready     = { read = 5, write = 5 }
      instances = { read = 5, write = 5 }
    }
    # The edges of what is valid: target utilization 20, min equal to max,
    # min below the provisioned figure.
    autoscaling = {
      target_utilization = 20
      scale_in_cooldown  = 600
      scale_out_cooldown = 30
      table              = { read = { min = 5, max = 5 }, write = { min = 1, max = 5 } }
      ready              = { read = { max = 5 }, write = { max = 5 } }
      instances          = { read = { max = 5 }, write = { max = 5 } }
    }
    tags = { Team = "orders" }
  }

  assert {
    condition = alltrue([for p in aws_appautoscaling_policy.this :
      p.target_tracking_scaling_policy_configuration[0].target_value == 20 &&
      p.target_tracking_scaling_policy_configuration[0].scale_in_cooldown == 600 &&
      p.target_tracking_scaling_policy_configuration[0].scale_out_cooldown == 30
    ]) && length(aws_appautoscaling_policy.this) == 6
    error_message = "Every policy must use the target utilization and cooldowns given."
  }

  assert {
    condition     = jsonencode({ for k, t in aws_appautoscaling_target.this : k => [t.min_capacity, t.max_capacity] if k == "table-read" || k == "table-write" }) == jsonencode({ "table-read" = [5, 5], "table-write" = [1, 5] })
    error_message = "A target's minimum may equal its maximum and lie below provisioned_capacity."
  }

  assert {
    condition     = alltrue([for t in aws_appautoscaling_target.this : t.tags == tomap({ Team = "orders" })]) && length(aws_appautoscaling_target.this) == 6
    error_message = "The scalable targets must carry the module's tags."
  }
}

run "autoscaling_target_90" {
  command = plan

  variables {
    billing_mode = "PROVISIONED"
    provisioned_capacity = {
      table     = { read = 1, write = 1 }
      ready     = { read = 1, write = 1 }
      instances = { read = 1, write = 1 }
    }
    autoscaling = {
      target_utilization = 90
      table              = { read = { max = 1 }, write = { max = 1 } }
      ready              = { read = { max = 1 }, write = { max = 1 } }
      instances          = { read = { max = 1 }, write = { max = 1 } }
    }
  }

  assert {
    condition     = length(aws_appautoscaling_policy.this) == 6 && alltrue([for p in aws_appautoscaling_policy.this : p.target_tracking_scaling_policy_configuration[0].target_value == 90])
    error_message = "A target utilization of 90 is valid."
  }
}

run "bad_billing_mode" {
  command = plan
  variables {
    billing_mode = "ON_DEMAND"
  }
  expect_failures = [var.billing_mode]
}

run "provisioned_without_capacity" {
  command = plan
  variables {
    billing_mode = "PROVISIONED"
  }
  expect_failures = [var.provisioned_capacity]
}

run "capacity_without_provisioned" {
  command = plan
  variables {
    provisioned_capacity = {
      table     = { read = 1, write = 1 }
      ready     = { read = 1, write = 1 }
      instances = { read = 1, write = 1 }
    }
  }
  expect_failures = [var.provisioned_capacity]
}

run "zero_capacity" {
  command = plan
  variables {
    billing_mode = "PROVISIONED"
    provisioned_capacity = {
      table     = { read = 1, write = 1 }
      ready     = { read = 0, write = 1 }
      instances = { read = 1, write = 1 }
    }
  }
  expect_failures = [var.provisioned_capacity]
}

run "retention_too_short" {
  command = plan
  variables {
    queue_message_retention_seconds = 30
  }
  expect_failures = [var.queue_message_retention_seconds]
}

run "visibility_timeout_too_long" {
  command = plan
  variables {
    queue_visibility_timeout_seconds = 60
  }
  expect_failures = [var.queue_visibility_timeout_seconds]
}

run "wait_time_out_of_range" {
  command = plan
  variables {
    queue_receive_wait_time_seconds = 21
  }
  expect_failures = [var.queue_receive_wait_time_seconds]
}

run "kms_alias_refused" {
  command = plan
  variables {
    queue_kms_key_arn = "alias/aws/sqs"
  }
  expect_failures = [var.queue_kms_key_arn]
}

run "same_queue_names" {
  command = plan
  variables {
    orchestrator_queue_name = "signals"
    worker_queue_name       = "signals"
  }
  expect_failures = [var.worker_queue_name]
}

# Each autoscaling case below differs from a valid configuration in one
# respect only, so that the validation expected is the one that fails.

run "autoscaling_on_demand" {
  command = plan
  variables {
    autoscaling = {
      table     = { read = { min = 1, max = 10 }, write = { min = 1, max = 10 } }
      ready     = { read = { min = 1, max = 10 }, write = { min = 1, max = 10 } }
      instances = { read = { min = 1, max = 10 }, write = { min = 1, max = 10 } }
    }
  }
  expect_failures = [var.autoscaling]
}

run "autoscaling_min_zero" {
  command = plan
  variables {
    billing_mode = "PROVISIONED"
    provisioned_capacity = {
      table     = { read = 1, write = 1 }
      ready     = { read = 1, write = 1 }
      instances = { read = 1, write = 1 }
    }
    autoscaling = {
      table     = { read = { max = 10 }, write = { max = 10 } }
      ready     = { read = { max = 10 }, write = { min = 0, max = 10 } }
      instances = { read = { max = 10 }, write = { max = 10 } }
    }
  }
  expect_failures = [var.autoscaling]
}

run "autoscaling_fractional_max" {
  command = plan
  variables {
    billing_mode = "PROVISIONED"
    provisioned_capacity = {
      table     = { read = 1, write = 1 }
      ready     = { read = 1, write = 1 }
      instances = { read = 1, write = 1 }
    }
    autoscaling = {
      table     = { read = { max = 10 }, write = { max = 10 } }
      ready     = { read = { max = 10 }, write = { max = 10 } }
      instances = { read = { max = 10.5 }, write = { max = 10 } }
    }
  }
  expect_failures = [var.autoscaling]
}

run "autoscaling_min_above_max" {
  command = plan
  variables {
    billing_mode = "PROVISIONED"
    provisioned_capacity = {
      table     = { read = 1, write = 1 }
      ready     = { read = 1, write = 1 }
      instances = { read = 1, write = 1 }
    }
    autoscaling = {
      table     = { read = { max = 10 }, write = { min = 11, max = 10 } }
      ready     = { read = { max = 10 }, write = { max = 10 } }
      instances = { read = { max = 10 }, write = { max = 10 } }
    }
  }
  expect_failures = [var.autoscaling]
}

run "autoscaling_provisioned_above_max" {
  # No min given: the minimum is provisioned_capacity (20), above max (10).
  command = plan
  variables {
    billing_mode = "PROVISIONED"
    provisioned_capacity = {
      table     = { read = 1, write = 1 }
      ready     = { read = 1, write = 1 }
      instances = { read = 20, write = 1 }
    }
    autoscaling = {
      table     = { read = { max = 10 }, write = { max = 10 } }
      ready     = { read = { max = 10 }, write = { max = 10 } }
      instances = { read = { max = 10 }, write = { max = 10 } }
    }
  }
  expect_failures = [var.autoscaling]
}

run "autoscaling_target_too_low" {
  command = plan
  variables {
    billing_mode = "PROVISIONED"
    provisioned_capacity = {
      table     = { read = 1, write = 1 }
      ready     = { read = 1, write = 1 }
      instances = { read = 1, write = 1 }
    }
    autoscaling = {
      target_utilization = 19
      table              = { read = { max = 10 }, write = { max = 10 } }
      ready              = { read = { max = 10 }, write = { max = 10 } }
      instances          = { read = { max = 10 }, write = { max = 10 } }
    }
  }
  expect_failures = [var.autoscaling]
}

run "autoscaling_target_too_high" {
  command = plan
  variables {
    billing_mode = "PROVISIONED"
    provisioned_capacity = {
      table     = { read = 1, write = 1 }
      ready     = { read = 1, write = 1 }
      instances = { read = 1, write = 1 }
    }
    autoscaling = {
      target_utilization = 91
      table              = { read = { max = 10 }, write = { max = 10 } }
      ready              = { read = { max = 10 }, write = { max = 10 } }
      instances          = { read = { max = 10 }, write = { max = 10 } }
    }
  }
  expect_failures = [var.autoscaling]
}

run "autoscaling_negative_cooldown" {
  command = plan
  variables {
    billing_mode = "PROVISIONED"
    provisioned_capacity = {
      table     = { read = 1, write = 1 }
      ready     = { read = 1, write = 1 }
      instances = { read = 1, write = 1 }
    }
    autoscaling = {
      scale_in_cooldown = -1
      table             = { read = { max = 10 }, write = { max = 10 } }
      ready             = { read = { max = 10 }, write = { max = 10 } }
      instances         = { read = { max = 10 }, write = { max = 10 } }
    }
  }
  expect_failures = [var.autoscaling]
}
