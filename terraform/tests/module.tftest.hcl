# Plans the module against a mocked AWS provider: no credentials, no network.
# Run with `terraform test` in terraform/ (scripts/tf-validate does).

mock_provider "aws" {
  mock_resource "aws_dynamodb_table" {
    defaults = {
      arn = "arn:aws:dynamodb:eu-west-1:123456789012:table/dynoxide"
    }
  }
}

variables {
  table_name = "dynoxide"
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
    condition     = keys(aws_sqs_queue.this) == ["orchestrator", "worker"] && aws_sqs_queue.this["orchestrator"].name == "dynoxide-orchestrator" && aws_sqs_queue.this["worker"].name == "dynoxide-worker"
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
