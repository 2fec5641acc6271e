# Auto scaling across applies, against a mocked AWS provider (no credentials,
# no network): runs that share a state (state_key, Terraform 1.11 or newer)
# apply a configuration, then plan or apply a changed one.
#
#   - with autoscaling, a later change of provisioned_capacity leaves the
#     table's and the indexes' capacities alone (ignore_changes), while the
#     same change is planned on a table without autoscaling;
#   - the outputs come from the autoscaled table;
#   - turning autoscaling on or off with the moved block the README gives
#     moves the table in the state instead of replacing it.

mock_provider "aws" {
  mock_resource "aws_dynamodb_table" {
    defaults = {
      # The ARN of any table the mock creates. A table that is kept, not
      # replaced, has the ARN its first run gave it instead (see below).
      arn = "arn:aws:dynamodb:eu-west-1:123456789012:table/created"
    }
  }
}

variables {
  table_name   = "duradyn"
  billing_mode = "PROVISIONED"
  provisioned_capacity = {
    table     = { read = 5, write = 4 }
    ready     = { read = 2, write = 3 }
    instances = { read = 1, write = 2 }
  }
  autoscaling = {
    table     = { read = { max = 100 }, write = { max = 100 } }
    ready     = { read = { max = 100 }, write = { max = 100 } }
    instances = { read = { max = 100 }, write = { max = 100 } }
  }
}

################################################################################
# Capacities are not reset
################################################################################

run "autoscaled_apply" {
  state_key = "autoscaled"

  assert {
    condition     = length(aws_dynamodb_table.this) == 0 && length(aws_dynamodb_table.autoscaled) == 1 && length(aws_appautoscaling_target.this) == 6 && length(aws_appautoscaling_policy.this) == 6
    error_message = "With autoscaling the module must create aws_dynamodb_table.autoscaled and six targets and policies."
  }

  assert {
    condition = jsonencode([output.table_name, output.table_arn, output.region, output.table_index_arns]) == jsonencode([
      "duradyn",
      "arn:aws:dynamodb:eu-west-1:123456789012:table/created",
      "eu-west-1",
      {
        instances = "arn:aws:dynamodb:eu-west-1:123456789012:table/created/index/instances"
        ready     = "arn:aws:dynamodb:eu-west-1:123456789012:table/created/index/ready"
      },
    ])
    error_message = "The table outputs must come from aws_dynamodb_table.autoscaled."
  }
}

run "autoscaled_capacity_change" {
  # What auto scaling does to the table cannot be seen here, but a change of
  # provisioned_capacity, which the table ignores alike, can.
  command   = plan
  state_key = "autoscaled"

  variables {
    provisioned_capacity = {
      table     = { read = 8, write = 9 }
      ready     = { read = 6, write = 7 }
      instances = { read = 3, write = 4 }
    }
  }

  assert {
    condition = jsonencode({
      table   = [aws_dynamodb_table.autoscaled[0].read_capacity, aws_dynamodb_table.autoscaled[0].write_capacity]
      indexes = { for ix in aws_dynamodb_table.autoscaled[0].global_secondary_index : ix.name => [ix.read_capacity, ix.write_capacity] }
      }) == jsonencode({
      table   = [5, 4]
      indexes = { ready = [2, 3], instances = [1, 2] }
    })
    error_message = "With autoscaling, the capacities of the table and its indexes must not be changed by a later plan."
  }

  assert {
    # The minimums left out follow provisioned_capacity: a raised figure
    # raises the capacity through auto scaling instead.
    condition     = jsonencode({ for k, t in aws_appautoscaling_target.this : k => t.min_capacity }) == jsonencode({ "table-read" = 8, "table-write" = 9, "ready-read" = 6, "ready-write" = 7, "instances-read" = 3, "instances-write" = 4 })
    error_message = "The minimums left out must follow provisioned_capacity."
  }
}

run "plain_apply" {
  state_key = "plain"

  variables {
    autoscaling = null
  }

  assert {
    condition     = length(aws_dynamodb_table.this) == 1 && length(aws_dynamodb_table.autoscaled) == 0 && output.table_arn == "arn:aws:dynamodb:eu-west-1:123456789012:table/created"
    error_message = "Without autoscaling the module must create aws_dynamodb_table.this."
  }
}

run "plain_capacity_change" {
  # The counterpart of autoscaled_capacity_change: without autoscaling the
  # same change is planned.
  command   = plan
  state_key = "plain"

  variables {
    autoscaling = null
    provisioned_capacity = {
      table     = { read = 8, write = 9 }
      ready     = { read = 6, write = 7 }
      instances = { read = 3, write = 4 }
    }
  }

  assert {
    condition = jsonencode({
      table   = [aws_dynamodb_table.this[0].read_capacity, aws_dynamodb_table.this[0].write_capacity]
      indexes = { for ix in aws_dynamodb_table.this[0].global_secondary_index : ix.name => [ix.read_capacity, ix.write_capacity] }
      }) == jsonencode({
      table   = [8, 9]
      indexes = { ready = [6, 7], instances = [3, 4] }
    })
    error_message = "Without autoscaling, a change of provisioned_capacity must be planned."
  }
}

################################################################################
# Turning auto scaling on and off
################################################################################

# tests/migration/before, after and revert are root modules calling the
# module without, with, then again without auto scaling; after and revert
# hold the moved blocks of the README. A table replaced instead of moved
# would get the mock's ARN ("table/created").

run "migration_before" {
  state_key = "migration"

  module {
    source = "./tests/migration/before"
  }

  override_resource {
    target = module.duradyn.aws_dynamodb_table.this[0]
    values = {
      arn = "arn:aws:dynamodb:eu-west-1:123456789012:table/duradyn"
    }
  }

  assert {
    condition     = output.table_arn == "arn:aws:dynamodb:eu-west-1:123456789012:table/duradyn"
    error_message = "The first apply must create the table without auto scaling."
  }
}

run "migration_autoscaling_on" {
  state_key = "migration"

  module {
    source = "./tests/migration/after"
  }

  assert {
    condition     = output.table_arn == "arn:aws:dynamodb:eu-west-1:123456789012:table/duradyn"
    error_message = "Turning autoscaling on with the moved block must keep the table, not replace it."
  }
}

run "migration_autoscaling_off" {
  state_key = "migration"

  module {
    source = "./tests/migration/revert"
  }

  assert {
    condition     = output.table_arn == "arn:aws:dynamodb:eu-west-1:123456789012:table/duradyn"
    error_message = "Turning autoscaling off with the moved block must keep the table, not replace it."
  }
}
