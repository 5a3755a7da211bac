//go:build tools

// Package tools pins Karpenter's kwok cloud provider, built by `make tools`
// as bin/karpenter-kwok.
package tools

import (
	_ "sigs.k8s.io/karpenter/kwok"
)
