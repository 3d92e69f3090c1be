package stack

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// InstallCRDs creates the CRDs found in dirs (YAML files, as controller-gen and prometheus-operator
// write them) and waits until the API server serves them. It is envtest's installer, so a CRD
// behaves here exactly as in the operator's envtest suites.
func (cp *ControlPlane) InstallCRDs(ctx context.Context, dirs ...string) error {
	deadline := 60 * time.Second
	if d, ok := ctx.Deadline(); ok {
		deadline = time.Until(d)
	}
	_, err := envtest.InstallCRDs(cp.AdminConfig(), envtest.CRDInstallOptions{
		Paths:              dirs,
		ErrorIfPathMissing: true,
		MaxTime:            deadline,
	})
	if err != nil {
		return fmt.Errorf("install CRDs from %v: %w", dirs, err)
	}
	return nil
}
