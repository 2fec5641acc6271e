# A root module calling the module with provisioned capacity and no auto
# scaling: the starting point of tests/autoscaling.tftest.hcl's migration.

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

output "table_arn" {
  value = module.duradyn.table_arn
}
