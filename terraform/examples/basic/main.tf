provider "aws" {
  region = var.region
}

module "duradyn" {
  source = "../../"

  table_name = var.name

  # An example should be easy to destroy; keep the default (true) in
  # production.
  deletion_protection_enabled = false

  tags = {
    Project = "duradyn-example"
  }
}
