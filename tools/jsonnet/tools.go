//go:build tools

// Package tools pins the jsonnet interpreter used to evaluate the mixin.
package tools

import (
	_ "github.com/google/go-jsonnet/cmd/jsonnet"
)
