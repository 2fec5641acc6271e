################################################################################
# Schema
################################################################################

# schema.json is a copy of the table shape the Go package tables defines
# (tables.Default, encoded in tables/testdata/schema.golden.json). The table
# below is built from it, and `make tf-validate` fails when the two files
# differ, so the Terraform table and the Go schema cannot drift apart.

locals {
  schema = jsondecode(file("${path.module}/schema.json"))

  # The IAM actions of the policy document's table, index and queue
  # statements; see the policy below.
  iam_actions = jsondecode(file("${path.module}/iam_actions.json"))

  # Every key attribute of the table and of its indexes, name => type. The
  # schema declares each name with one type only.
  key_attributes = {
    for name, types in {
      for a in concat(
        [local.schema.partition_key, local.schema.sort_key],
        flatten([for ix in local.schema.global_secondary_indexes : [ix.partition_key, ix.sort_key]]),
      ) : a.name => a.type... if a.name != ""
    } : name => types[0]
  }

  provisioned = var.billing_mode == "PROVISIONED"

  # With autoscaling the table is aws_dynamodb_table.autoscaled, which
  # ignores changes to its capacities; without, aws_dynamodb_table.this. At
  # most one of the two exists.
  autoscaling = var.create && var.autoscaling != null
  table       = one(concat(aws_dynamodb_table.this, aws_dynamodb_table.autoscaled))

  table_arn = try(local.table.arn, null)

  # The region the table lives in, read from its ARN
  # (arn:aws:dynamodb:REGION:ACCOUNT:table/NAME). This works alike with the
  # 5.x and 6.x AWS providers, whose aws_region data sources differ.
  region = try(split(":", local.table.arn)[3], null)

  queue_names = {
    orchestrator = coalesce(var.orchestrator_queue_name, "${var.table_name}-orchestrator")
    worker       = coalesce(var.worker_queue_name, "${var.table_name}-worker")
  }

  kms_key_arns = compact([var.table_kms_key_arn, var.queue_kms_key_arn])
}

################################################################################
# Table
################################################################################

# Without autoscaling (the default): Terraform owns the capacities.
resource "aws_dynamodb_table" "this" {
  count = var.create && var.autoscaling == null ? 1 : 0

  name         = var.table_name
  billing_mode = var.billing_mode
  hash_key     = local.schema.partition_key.name
  range_key    = local.schema.sort_key.name != "" ? local.schema.sort_key.name : null

  read_capacity  = local.provisioned ? var.provisioned_capacity.table.read : null
  write_capacity = local.provisioned ? var.provisioned_capacity.table.write : null

  dynamic "attribute" {
    for_each = local.key_attributes
    content {
      name = attribute.key
      type = attribute.value
    }
  }

  dynamic "global_secondary_index" {
    for_each = local.schema.global_secondary_indexes
    iterator = ix
    content {
      name               = ix.value.name
      hash_key           = ix.value.partition_key.name
      range_key          = ix.value.sort_key.name != "" ? ix.value.sort_key.name : null
      projection_type    = ix.value.projection_type
      non_key_attributes = ix.value.projection_type == "INCLUDE" ? ix.value.non_key_attributes : null
      read_capacity      = local.provisioned ? var.provisioned_capacity[ix.value.name].read : null
      write_capacity     = local.provisioned ? var.provisioned_capacity[ix.value.name].write : null
    }
  }

  ttl {
    enabled        = local.schema.ttl_attribute != ""
    attribute_name = local.schema.ttl_attribute
  }

  point_in_time_recovery {
    enabled = var.point_in_time_recovery_enabled
  }

  # DynamoDB always encrypts at rest. Without a key ARN it uses an AWS owned
  # key; with one, the customer managed key.
  server_side_encryption {
    enabled     = var.table_kms_key_arn != null
    kms_key_arn = var.table_kms_key_arn
  }

  deletion_protection_enabled = var.deletion_protection_enabled

  tags = merge(var.tags, var.table_tags)
}

# With autoscaling: the same table, except that Application Auto Scaling owns
# the capacities once the table exists. A lifecycle block cannot depend on a
# variable, hence a second resource. Keep its arguments identical to those
# of aws_dynamodb_table.this above (tests/module.tftest.hcl checks both
# against schema.json).
#
# global_secondary_index is a set of blocks whose capacities cannot be
# ignored one by one, so the whole block is ignored: Terraform creates the
# indexes with the table but does not update them afterwards (see the
# README, "Auto scaling").
resource "aws_dynamodb_table" "autoscaled" {
  count = local.autoscaling ? 1 : 0

  name         = var.table_name
  billing_mode = var.billing_mode
  hash_key     = local.schema.partition_key.name
  range_key    = local.schema.sort_key.name != "" ? local.schema.sort_key.name : null

  read_capacity  = local.provisioned ? var.provisioned_capacity.table.read : null
  write_capacity = local.provisioned ? var.provisioned_capacity.table.write : null

  dynamic "attribute" {
    for_each = local.key_attributes
    content {
      name = attribute.key
      type = attribute.value
    }
  }

  dynamic "global_secondary_index" {
    for_each = local.schema.global_secondary_indexes
    iterator = ix
    content {
      name               = ix.value.name
      hash_key           = ix.value.partition_key.name
      range_key          = ix.value.sort_key.name != "" ? ix.value.sort_key.name : null
      projection_type    = ix.value.projection_type
      non_key_attributes = ix.value.projection_type == "INCLUDE" ? ix.value.non_key_attributes : null
      read_capacity      = local.provisioned ? var.provisioned_capacity[ix.value.name].read : null
      write_capacity     = local.provisioned ? var.provisioned_capacity[ix.value.name].write : null
    }
  }

  ttl {
    enabled        = local.schema.ttl_attribute != ""
    attribute_name = local.schema.ttl_attribute
  }

  point_in_time_recovery {
    enabled = var.point_in_time_recovery_enabled
  }

  # DynamoDB always encrypts at rest. Without a key ARN it uses an AWS owned
  # key; with one, the customer managed key.
  server_side_encryption {
    enabled     = var.table_kms_key_arn != null
    kms_key_arn = var.table_kms_key_arn
  }

  deletion_protection_enabled = var.deletion_protection_enabled

  tags = merge(var.tags, var.table_tags)

  lifecycle {
    ignore_changes = [read_capacity, write_capacity, global_secondary_index]
  }
}

################################################################################
# Auto scaling
################################################################################

# With var.autoscaling, Application Auto Scaling adjusts the read and write
# capacity of the table and of each index between a minimum and a maximum,
# to keep consumed/provisioned capacity near the target utilization: one
# scalable target and one target-tracking policy per table or index and
# per read or write, six of each.

locals {
  autoscaling_targets = local.autoscaling ? {
    for t in flatten([
      for part in concat(["table"], [for ix in local.schema.global_secondary_indexes : ix.name]) : [
        for dim in ["read", "write"] : {
          key  = "${part}-${dim}"
          part = part
          kind = part == "table" ? "table" : "index"
          unit = dim == "read" ? "Read" : "Write"
          # The minimum defaults to provisioned_capacity, the capacity the
          # table is created with.
          min = try(coalesce(var.autoscaling[part][dim].min, var.provisioned_capacity[part][dim]), null)
          max = var.autoscaling[part][dim].max
        }
      ]
    ]) : t.key => t
  } : {}
}

resource "aws_appautoscaling_target" "this" {
  for_each = local.autoscaling_targets

  service_namespace  = "dynamodb"
  resource_id        = each.value.kind == "table" ? "table/${aws_dynamodb_table.autoscaled[0].name}" : "table/${aws_dynamodb_table.autoscaled[0].name}/index/${each.value.part}"
  scalable_dimension = "dynamodb:${each.value.kind}:${each.value.unit}CapacityUnits"
  min_capacity       = each.value.min
  max_capacity       = each.value.max

  tags = var.tags
}

resource "aws_appautoscaling_policy" "this" {
  for_each = aws_appautoscaling_target.this

  # Policy names are unique per scalable target only.
  name               = "duradyn-${each.key}"
  policy_type        = "TargetTrackingScaling"
  service_namespace  = each.value.service_namespace
  resource_id        = each.value.resource_id
  scalable_dimension = each.value.scalable_dimension

  target_tracking_scaling_policy_configuration {
    predefined_metric_specification {
      predefined_metric_type = "DynamoDB${local.autoscaling_targets[each.key].unit}CapacityUtilization"
    }
    target_value       = var.autoscaling.target_utilization
    scale_in_cooldown  = var.autoscaling.scale_in_cooldown
    scale_out_cooldown = var.autoscaling.scale_out_cooldown
  }
}

################################################################################
# Signal queues
################################################################################

# Two SQS standard queues carry wake-up signals only: DynamoDB holds all work,
# and a lost, duplicated or late signal costs latency, never correctness. No
# dead-letter queue: a signal that could not be handled is worth nothing later.
resource "aws_sqs_queue" "this" {
  for_each = var.create ? local.queue_names : {}

  name                       = each.value
  message_retention_seconds  = var.queue_message_retention_seconds
  visibility_timeout_seconds = var.queue_visibility_timeout_seconds
  receive_wait_time_seconds  = var.queue_receive_wait_time_seconds
  delay_seconds              = 0

  sqs_managed_sse_enabled           = var.queue_kms_key_arn == null ? true : null
  kms_master_key_id                 = var.queue_kms_key_arn
  kms_data_key_reuse_period_seconds = var.queue_kms_key_arn != null ? var.queue_kms_data_key_reuse_period_seconds : null

  tags = merge(var.tags, var.queue_tags, { "duradyn:signal-kind" = each.key })
}

################################################################################
# IAM policy
################################################################################

# The least privilege a duradyn process needs: item reads and writes on the
# table, queries of its indexes, and sending, receiving and deleting signals.
# The action lists are read from iam_actions.json, which a Go test
# (internal/parity) checks against the SDK operations the provider calls:
# every call has its permission, and nothing else is granted.
data "aws_iam_policy_document" "this" {
  count = var.create ? 1 : 0

  statement {
    sid       = "DuradynTable"
    effect    = "Allow"
    actions   = local.iam_actions.table
    resources = [local.table_arn]
  }

  statement {
    sid       = "DuradynIndexes"
    effect    = "Allow"
    actions   = local.iam_actions.indexes
    resources = [for ix in local.schema.global_secondary_indexes : "${local.table_arn}/index/${ix.name}"]
  }

  statement {
    sid       = "DuradynSignalQueues"
    effect    = "Allow"
    actions   = local.iam_actions.queues
    resources = [for q in aws_sqs_queue.this : q.arn]
  }

  dynamic "statement" {
    for_each = length(local.kms_key_arns) > 0 ? [local.kms_key_arns] : []
    content {
      sid       = "DuradynKMS"
      effect    = "Allow"
      actions   = ["kms:Decrypt", "kms:GenerateDataKey"]
      resources = statement.value

      condition {
        test     = "StringEquals"
        variable = "kms:ViaService"
        values = [
          "dynamodb.${local.region}.amazonaws.com",
          "sqs.${local.region}.amazonaws.com",
        ]
      }
    }
  }
}

resource "aws_iam_policy" "this" {
  count = var.create && var.create_iam_policy ? 1 : 0

  name        = coalesce(var.iam_policy_name, "${var.table_name}-duradyn")
  path        = var.iam_policy_path
  description = "Access a duradyn process needs to table ${var.table_name} and its signal queues."
  policy      = data.aws_iam_policy_document.this[0].json

  tags = var.tags
}
