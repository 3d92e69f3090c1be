package stack

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
)

// tokenLifetime is how long TokenRequest tokens live; far beyond any test.
const tokenLifetime = 3600

// AdminConfig returns a rest.Config for "loopwatch-admin" in group system:masters, which RBAC
// always allows. Each call returns a fresh copy.
func (cp *ControlPlane) AdminConfig() *rest.Config { return rest.CopyConfig(cp.admin) }

// UserConfig returns a rest.Config authenticating as user with groups through a client
// certificate the control plane's CA issues on the spot: audit events name exactly this user.
func (cp *ControlPlane) UserConfig(user string, groups ...string) (*rest.Config, error) {
	kp, err := cp.ca.Client(user, groups...)
	if err != nil {
		return nil, err
	}
	return &rest.Config{
		Host: cp.host,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   cp.ca.certPEM,
			CertData: kp.CertPEM,
			KeyData:  kp.KeyPEM,
		},
	}, nil
}

// ServiceAccountConfig returns a rest.Config authenticating as the ServiceAccount namespace/name
// ("system:serviceaccount:<namespace>:<name>") with a TokenRequest token, creating the namespace
// and the ServiceAccount when missing.
func (cp *ControlPlane) ServiceAccountConfig(ctx context.Context, namespace, name string) (*rest.Config, error) {
	client, err := kubernetes.NewForConfig(cp.AdminConfig())
	if err != nil {
		return nil, fmt.Errorf("build admin client: %w", err)
	}
	if err := ensureServiceAccount(ctx, client, namespace, name); err != nil {
		return nil, err
	}
	return cp.tokenConfig(ctx, client, namespace, name, nil)
}

// PodConfig returns a rest.Config authenticating as the ServiceAccount namespace/serviceAccount
// with a token bound to the Pod namespace/pod, creating namespace, ServiceAccount and Pod when
// missing. Nothing schedules the Pod; it only has to exist (and keep its UID) for the token to
// stay valid. Audit events for requests made with this config carry
// user.extra["authentication.kubernetes.io/pod-name"] = pod, which is how replicas of one
// ServiceAccount are told apart.
func (cp *ControlPlane) PodConfig(ctx context.Context, namespace, serviceAccount, pod string) (*rest.Config, error) {
	client, err := kubernetes.NewForConfig(cp.AdminConfig())
	if err != nil {
		return nil, fmt.Errorf("build admin client: %w", err)
	}
	if err := ensureServiceAccount(ctx, client, namespace, serviceAccount); err != nil {
		return nil, err
	}
	p, err := ensurePod(ctx, client, namespace, serviceAccount, pod)
	if err != nil {
		return nil, err
	}
	ref := &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.Name, UID: p.UID}
	return cp.tokenConfig(ctx, client, namespace, serviceAccount, ref)
}

// tokenConfig requests a token for the ServiceAccount, optionally bound to an object.
func (cp *ControlPlane) tokenConfig(ctx context.Context, client kubernetes.Interface, namespace, name string, bound *authenticationv1.BoundObjectReference) (*rest.Config, error) {
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To[int64](tokenLifetime),
		BoundObjectRef:    bound,
	}}
	tr, err := client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, req, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("request token for service account %s/%s: %w", namespace, name, err)
	}
	return &rest.Config{
		Host:            cp.host,
		BearerToken:     tr.Status.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: cp.ca.certPEM},
	}, nil
}

// ensureNamespace creates namespace unless it exists.
func ensureNamespace(ctx context.Context, client kubernetes.Interface, namespace string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %q: %w", namespace, err)
	}
	return nil
}

// ensureServiceAccount creates namespace and ServiceAccount unless they exist. No controller
// manager runs, so nothing else creates them (not even "default").
func ensureServiceAccount(ctx context.Context, client kubernetes.Interface, namespace, name string) error {
	if err := ensureNamespace(ctx, client, namespace); err != nil {
		return err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	if _, err := client.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create service account %s/%s: %w", namespace, name, err)
	}
	return nil
}

// ensurePod returns the Pod namespace/name, creating it to run as serviceAccount when missing.
// An existing Pod of another ServiceAccount is an error: a token bound to it would not validate.
func ensurePod(ctx context.Context, client kubernetes.Interface, namespace, serviceAccount, name string) (*corev1.Pod, error) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{"app.kubernetes.io/managed-by": "loopwatch-stack"}},
		Spec: corev1.PodSpec{
			ServiceAccountName:           serviceAccount,
			AutomountServiceAccountToken: ptr.To(false),
			Containers:                   []corev1.Container{{Name: "replica", Image: "registry.invalid/loopwatch/replica:test"}},
		},
	}
	created, err := client.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err == nil {
		return created, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create pod %s/%s: %w", namespace, name, err)
	}
	existing, err := client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get pod %s/%s: %w", namespace, name, err)
	}
	if existing.Spec.ServiceAccountName != serviceAccount {
		return nil, fmt.Errorf("pod %s/%s runs as service account %q, not %q", namespace, name, existing.Spec.ServiceAccountName, serviceAccount)
	}
	return existing, nil
}

// WriteKubeconfig writes cfg (a control plane's admin, user, service-account or pod config) as a
// kubeconfig file, for a process started with KUBECONFIG or --kubeconfig.
func WriteKubeconfig(path string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["loopwatch"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["loopwatch"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken, ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts["loopwatch"] = &clientcmdapi.Context{Cluster: "loopwatch", AuthInfo: "loopwatch"}
	kc.CurrentContext = "loopwatch"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return nil
}
