package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/loopwatch/loopwatch/exporter"
)

// replicaFlags run the exporter as one of several replicas behind one Service (README
// "Replicas"): the one holding a Kubernetes Lease counts, the others stand by in step with it.
type replicaFlags struct {
	enabled                                   bool
	leaseName, leaseNamespace                 string
	leaseDuration, renewDeadline, retryPeriod time.Duration
	name, address                             string
	kubeconfig                                string
	peerCAFile                                string
	ackTimeout                                time.Duration
}

func (f *replicaFlags) bind(fs *pflag.FlagSet) {
	fs.BoolVar(&f.enabled, "leader-elect", false, "run as one of several replicas: the holder of a Lease counts, the others follow it in step, forward the batches they are sent to it, and take over")
	fs.StringVar(&f.leaseName, "lease-name", "loopwatch-exporter", "the Lease the replicas contend for")
	fs.StringVar(&f.leaseNamespace, "lease-namespace", "", "the Lease's namespace ($POD_NAMESPACE, else the pod's service account's)")
	fs.DurationVar(&f.leaseDuration, "lease-duration", exporter.DefaultLeaseDuration, "how long a Lease lasts unrenewed: a killed leader is replaced within it (and a retry period)")
	fs.DurationVar(&f.renewDeadline, "lease-renew-deadline", exporter.DefaultRenewDeadline, "how long a leader keeps trying to renew before it steps down")
	fs.DurationVar(&f.retryPeriod, "lease-retry-period", exporter.DefaultRetryPeriod, "how often replicas try to acquire or renew the Lease")
	fs.StringVar(&f.name, "replica-name", "", "this replica's name in the Lease ($POD_NAME, else the host name)")
	fs.StringVar(&f.address, "replica-address", "", "host:port where the other replicas reach this one ($POD_IP and the --listen-address port)")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig for the Lease (in-cluster configuration when empty)")
	fs.StringVar(&f.peerCAFile, "peer-ca-file", "", "CA bundle that signs the replicas' serving certificates: peers are then recognised by it and the same DNS names, not by the very same certificate (a certificate rotated one replica at a time)")
	fs.DurationVar(&f.ackTimeout, "replica-ack-timeout", exporter.DefaultAckTimeout, "how long the leader waits for a standby to apply a batch before it drops the standby")
}

// setup makes e a replica and returns the election to run, with the server's hook that releases
// the lease on shutdown once e has stepped down.
func (f *replicaFlags) setup(e *exporter.Exporter, srv *exporter.ServerConfig, ingest bool, managed bool, log *slog.Logger) (*election, error) {
	var errs []error
	if srv.InsecureHTTP || srv.TLSCertFile == "" || srv.TLSKeyFile == "" {
		errs = append(errs, errors.New("--leader-elect: replicas need --tls-cert-file and --tls-key-file (they recognise each other by the serving certificate)"))
	}
	if ingest || managed {
		errs = append(errs, errors.New("--leader-elect: replicas take the audit webhook only, not --ingest-file or a managed-cluster source"))
	}
	if f.leaseDuration <= f.renewDeadline || f.renewDeadline <= time.Duration(1.2*float64(f.retryPeriod)) {
		errs = append(errs, fmt.Errorf("--lease-duration (%s) must exceed --lease-renew-deadline (%s), which must exceed 1.2 x --lease-retry-period (%s)", f.leaseDuration, f.renewDeadline, f.retryPeriod))
	}
	name := firstOf(f.name, os.Getenv("POD_NAME"))
	if name == "" {
		name, _ = os.Hostname()
	}
	if name == "" || strings.ContainsAny(name, "_@") {
		errs = append(errs, fmt.Errorf("--replica-name %q: set a name without _ or @ (or $POD_NAME)", name))
	}
	address := f.address
	if address == "" {
		if ip := os.Getenv("POD_IP"); ip != "" {
			_, port, err := net.SplitHostPort(srv.Addr)
			if err == nil {
				address = net.JoinHostPort(ip, port)
			}
		}
	}
	if _, _, err := net.SplitHostPort(address); err != nil {
		errs = append(errs, fmt.Errorf("--replica-address %q: want host:port (or $POD_IP with a --listen-address port)", address))
	}
	namespace := firstOf(f.leaseNamespace, os.Getenv("POD_NAMESPACE"))
	if namespace == "" {
		if b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil {
			namespace = strings.TrimSpace(string(b))
		}
	}
	if namespace == "" {
		errs = append(errs, errors.New("--lease-namespace: not set, and neither $POD_NAMESPACE nor the service account's namespace is"))
	}
	var restCfg *rest.Config
	var err error
	if f.kubeconfig != "" {
		restCfg, err = clientcmd.BuildConfigFromFlags("", f.kubeconfig)
	} else {
		restCfg, err = rest.InClusterConfig()
	}
	if err != nil {
		errs = append(errs, fmt.Errorf("--kubeconfig: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	peers, err := exporter.LoadPeers(srv.TLSCertFile, srv.TLSKeyFile, f.peerCAFile)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, 4)
	_, _ = rand.Read(nonce)
	ecfg := exporter.ElectionConfig{
		Client: client, Namespace: namespace, Name: f.leaseName,
		LeaseDuration: f.leaseDuration, RenewDeadline: f.renewDeadline, RetryPeriod: f.retryPeriod,
	}
	identity := exporter.ReplicaIdentity(name, hex.EncodeToString(nonce), address)
	if err := e.EnableReplication(exporter.ReplicationConfig{
		Identity: identity, Peers: peers, AckTimeout: f.ackTimeout, MaxBodyBytes: srv.MaxBodyBytes,
		TakeoverWindow: ecfg.TakeoverWindow(),
	}); err != nil {
		return nil, err
	}
	el := &election{e: e, cfg: ecfg, done: make(chan error, 1)}
	srv.SteppedDown = el.release
	log.Info("Replica", "identity", identity, "lease", namespace+"/"+f.leaseName)
	return el, nil
}

func firstOf(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// election runs the lease contention beside the server.
type election struct {
	e      *exporter.Exporter
	cfg    exporter.ElectionConfig
	cancel context.CancelFunc
	done   chan error
}

// start runs the election until release; lost is called if the leader loses its lease.
func (el *election) start(lost func(error)) {
	ctx, cancel := context.WithCancel(context.Background())
	el.cancel = cancel
	go func() {
		err := el.e.RunElection(ctx, el.cfg)
		if err != nil {
			lost(err)
		}
		el.done <- err
	}()
}

// release ends the election, giving the lease up if held, and waits for it (bounded by the
// renew deadline, which bounds client-go's release).
func (el *election) release() {
	if el.cancel == nil {
		return
	}
	el.cancel()
	select {
	case err := <-el.done:
		el.done <- err
	case <-time.After(el.cfg.RenewDeadline + time.Second):
	}
}
