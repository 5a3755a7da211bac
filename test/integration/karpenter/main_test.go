// Package karpenter runs Karpenter's kwok cloud provider (bin/karpenter-kwok,
// built from sigs.k8s.io/karpenter by `make tools`) on a managed cluster with
// real processes: etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and kwok playing kubelet for the nodes Karpenter launches.
// It is the ground for clusters that grow on demand. Its tests skip when
// bin/karpenter-kwok is not built.
package karpenter

import (
	"testing"

	"github.com/fleetfit/fleetfit/test/framework"
)

func TestMain(m *testing.M) {
	framework.Main(m)
}
