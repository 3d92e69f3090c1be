//go:build tools

// Package tools pins the kube-apiserver that tests run against.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
)
