# This file is maintained automatically by "terraform init".
# Manual edits may be lost in future updates.

provider "registry.terraform.io/hashicorp/null" {
  version     = "3.2.2"
  constraints = "~> 3.2"
  hashes = [
    "h1:/aSaBuZv08OUVOT5FBrSKQ87Yi4BNjTckJ0hfVQHiCY=",
    "zh:5dbdacccd21425972a49a7924bbada73600f057db6bbf3428f9453608374b93f",
    "zh:fc3385e6c95fb025e6578e8bdf8a5dcaef6bbf8f680fe33c6329226cc7bf9889",
  ]
}

provider "registry.terraform.io/hashicorp/random" {
  version     = "3.6.2"
  constraints = "~> 3.5"
  hashes = [
    "h1:ZLTm/UnuHwqkhyatrV9l0QZxKyCqYtM5wVnbdxAZuHI=",
    "zh:7f26a21533fd050f2663c01df96e35015320ec7464b3354fd43df778d5592ba6",
    "zh:83840e8a9e3099f140698aa28fc55c62f821da60182535e6e8e614a63965bda4",
    "zh:db8acd91b28eb68cee8db4937abd36785baf90769409da6593cc1431af00b1df",
  ]
}
