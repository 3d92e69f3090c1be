//go:build tools

// Package tools pins golangci-lint, which `make lint` runs with the project's .golangci.yml.
package tools

import (
	_ "github.com/golangci/golangci-lint/v2/cmd/golangci-lint"
)
