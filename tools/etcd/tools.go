//go:build tools

// Package tools pins the etcd server that kube-apiserver stores its objects in during tests.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
)
