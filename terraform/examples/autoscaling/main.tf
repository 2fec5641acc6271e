provider "aws" {
  region = var.region
}

module "duradyn" {
  source = "../../"

  table_name = var.name

  # Provisioned capacity: the capacities the table is created with, and the
  # minimums auto scaling keeps.
  billing_mode = "PROVISIONED"
  provisioned_capacity = {
    table     = { read = 5, write = 5 }
    ready     = { read = 5, write = 5 }
    instances = { read = 1, write = 2 }
  }

  # Auto scaling between those minimums and these maximums, at the default
  # target utilization of 70 %.
  autoscaling = {
    table     = { read = { max = 100 }, write = { max = 100 } }
    ready     = { read = { max = 100 }, write = { max = 100 } }
    instances = { read = { max = 20 }, write = { max = 50 } }
  }

  # An example should be easy to destroy; keep the default (true) in
  # production.
  deletion_protection_enabled = false

  tags = {
    Project = "duradyn-example"
  }
}
