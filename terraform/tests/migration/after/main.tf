# The same root module with auto scaling turned on, and the moved block the
# README tells users to add so that the table is moved in the state, not
# replaced.

terraform {
  required_providers {
    aws = {
      source = "hashicorp/aws"
    }
  }
}

module "duradyn" {
  source = "../../.."

  table_name   = "duradyn"
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

moved {
  from = module.duradyn.aws_dynamodb_table.this[0]
  to   = module.duradyn.aws_dynamodb_table.autoscaled[0]
}

output "table_arn" {
  value = module.duradyn.table_arn
}
