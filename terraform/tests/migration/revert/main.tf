# Auto scaling turned off again, with the moved block back to
# aws_dynamodb_table.this.

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
}

moved {
  from = module.duradyn.aws_dynamodb_table.autoscaled[0]
  to   = module.duradyn.aws_dynamodb_table.this[0]
}

output "table_arn" {
  value = module.duradyn.table_arn
}
