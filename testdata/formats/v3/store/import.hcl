approvals {
  keyring  = "stations.pub.asc"
  required = 1
}
