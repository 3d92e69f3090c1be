package stack

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// BinEnv names the environment variable that points at the directory of pinned binaries; the
// Makefile exports it as bin/.
const BinEnv = "LOOPWATCH_BIN"

// BinDir returns the directory holding the binaries `make tools` builds: $LOOPWATCH_BIN when set,
// else bin/ next to the nearest go.mod above the working directory (go test runs in the package
// directory, so this finds the repository's bin/ without any setup).
func BinDir() (string, error) {
	if dir := os.Getenv(BinEnv); dir != "" {
		return filepath.Abs(dir)
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find bin directory: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "bin"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("find bin directory: no go.mod above the working directory and $%s is unset", BinEnv)
		}
		dir = parent
	}
}

// ErrMissingBinary is wrapped by LookPath's error when a pinned binary has not been built.
var ErrMissingBinary = errors.New("pinned tool missing")

// LookPath returns the path of the pinned binary name in BinDir, or an error (wrapping
// ErrMissingBinary when it is absent) that tells the reader to run `make tools`.
func LookPath(name string) (string, error) {
	dir, err := BinDir()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, name)
	info, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("%s not found in %s: run `make tools` to build the pinned tools: %w", name, dir, ErrMissingBinary)
	}
	if err != nil {
		return "", fmt.Errorf("look up %s: %w", name, err)
	}
	if info.IsDir() || info.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s is not an executable file: run `make tools`: %w", path, ErrMissingBinary)
	}
	return path, nil
}

// EnvtestAssets returns the directory to use as KUBEBUILDER_ASSETS for
// sigs.k8s.io/controller-runtime/pkg/envtest (it holds etcd and kube-apiserver), checking that both
// binaries are built. The Makefile already exports KUBEBUILDER_ASSETS; this serves plain `go test`.
func EnvtestAssets() (string, error) {
	for _, name := range []string{"etcd", "kube-apiserver"} {
		if _, err := LookPath(name); err != nil {
			return "", err
		}
	}
	return BinDir()
}

// PrometheusOperatorCRDDir returns the directory holding the PrometheusRule and ServiceMonitor
// CRDs that `make tools` copies from prometheus-operator's example/prometheus-operator-crd/.
func PrometheusOperatorCRDDir() (string, error) {
	dir, err := BinDir()
	if err != nil {
		return "", err
	}
	crds := filepath.Join(dir, "crds")
	for _, f := range []string{"monitoring.coreos.com_prometheusrules.yaml", "monitoring.coreos.com_servicemonitors.yaml"} {
		if _, err := os.Stat(filepath.Join(crds, f)); err != nil {
			return "", fmt.Errorf("%s not found in %s: run `make tools`: %w", f, crds, ErrMissingBinary)
		}
	}
	return crds, nil
}

// PrometheusOperatorRunCRDDir returns the directory holding the CRDs prometheus-operator's
// Prometheus controller needs besides PrometheusRule and ServiceMonitor (Prometheus, PodMonitor,
// Probe), which `make tools` copies to bin/crds-operator/: install it with
// PrometheusOperatorCRDDir to run the operator.
func PrometheusOperatorRunCRDDir() (string, error) {
	dir, err := BinDir()
	if err != nil {
		return "", err
	}
	crds := filepath.Join(dir, "crds-operator")
	for _, f := range []string{"monitoring.coreos.com_prometheuses.yaml", "monitoring.coreos.com_podmonitors.yaml", "monitoring.coreos.com_probes.yaml"} {
		if _, err := os.Stat(filepath.Join(crds, f)); err != nil {
			return "", fmt.Errorf("%s not found in %s: run `make tools`: %w", f, crds, ErrMissingBinary)
		}
	}
	return crds, nil
}

// FreeAddr returns "127.0.0.1:<port>" for a loopback port that was free a moment ago, for a test
// server whose listener cannot be handed over (such as controller-runtime's metrics server).
//
// The port lies below the kernel's ephemeral range (net.ipv4.ip_local_port_range), where the
// kernel never picks a port by itself: a port from that range (what listening on port 0 returns)
// can be taken by any outgoing connection's local port between this call and the server's bind,
// and was (a controller's metrics server failed with "address already in use"). Below it only a
// process that binds that very port can take it. Ports handed out before by this process are not
// handed out again. When the range leaves no room below it, the port comes from port 0.
func FreeAddr() (string, error) {
	if lo, hi := portsBelowEphemeral(); hi-lo >= 1000 {
		freeMu.Lock()
		defer freeMu.Unlock()
		for range 200 {
			port := lo + rand.IntN(hi-lo)
			if handedOut[port] {
				continue
			}
			addr, err := probe(net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			if err != nil {
				continue // in use
			}
			handedOut[port] = true
			return addr, nil
		}
	}
	return probe("127.0.0.1:0")
}

// probe listens on addr and closes the listener again, returning the address it listened on.
func probe(addr string) (string, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("find a free loopback port: %w", err)
	}
	got := l.Addr().String()
	if err := l.Close(); err != nil {
		return "", fmt.Errorf("find a free loopback port: %w", err)
	}
	return got, nil
}

// lowestFreePort is the bottom of FreeAddr's range: above the ports services commonly listen on.
const lowestFreePort = 15000

var (
	freeMu    sync.Mutex
	handedOut = map[int]bool{}
)

// portsBelowEphemeral returns [lowestFreePort, the ephemeral range's first port), or an empty
// range when the kernel does not say (not Linux) or its range starts lower.
func portsBelowEphemeral() (lo, hi int) {
	raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0
	}
	fields := strings.Fields(string(raw))
	if len(fields) != 2 {
		return 0, 0
	}
	first, err := strconv.Atoi(fields[0])
	if err != nil || first <= lowestFreePort {
		return 0, 0
	}
	return lowestFreePort, first
}

// freePort is FreeAddr's port alone.
func freePort() (string, error) {
	addr, err := FreeAddr()
	if err != nil {
		return "", err
	}
	_, port, err := net.SplitHostPort(addr)
	return port, err
}

// Versions names each pinned binary of names by the first line its --version prints
// ("Kubernetes v1.36.3", "prometheus, version 3.16.0 (…)"), for the tables that say what they
// measured on; a binary that cannot tell is named "<name> (version unknown)".
func Versions(names ...string) []string {
	var out []string
	for _, name := range names {
		v := name + " (version unknown)"
		if path, err := LookPath(name); err == nil {
			if raw, err := exec.Command(path, "--version").Output(); err == nil {
				line, _, _ := strings.Cut(string(raw), "\n")
				if line = strings.TrimSpace(line); line != "" {
					v = line
					if before, _, ok := strings.Cut(line, " (branch"); ok {
						v = before
					}
				}
			}
		}
		out = append(out, v)
	}
	return out
}
