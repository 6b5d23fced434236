// Package kube tests airgap on Kubernetes: the image 'make image' builds
// (reproducible, non-root, no shell, both platforms), and the Helm chart
// in server/deploy/helm/airgap, rendered with Helm's Go library for each
// value profile and applied (server-side dry run, warnings as errors) to a
// real kube-apiserver with etcd on loopback, in a namespace that enforces
// the restricted Pod Security Standard; wrong values are refused by the
// chart's schema with a readable message.
package kube
