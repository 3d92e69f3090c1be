package stack

import (
	"context"
	"fmt"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// UserSubject is the RBAC subject for a user, as UserConfig authenticates it.
func UserSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
}

// ServiceAccountSubject is the RBAC subject for a ServiceAccount; it covers PodConfig tokens too.
func ServiceAccountSubject(namespace, name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}
}

// Grant gives subject the rules cluster-wide through a new ClusterRole and ClusterRoleBinding,
// and returns once the authorizer allows the first rule (RBAC reads bindings from an informer,
// so a fresh binding takes a moment to apply).
func (cp *ControlPlane) Grant(ctx context.Context, subject rbacv1.Subject, rules ...rbacv1.PolicyRule) error {
	if len(rules) == 0 {
		return fmt.Errorf("grant %s %q: no rules", subject.Kind, subject.Name)
	}
	client, err := kubernetes.NewForConfig(cp.AdminConfig())
	if err != nil {
		return fmt.Errorf("build admin client: %w", err)
	}
	role, err := client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "loopwatch-grant-"},
		Rules:      rules,
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("grant %s %q: create cluster role: %w", subject.Kind, subject.Name, err)
	}
	return bind(ctx, client, subject, role.Name, rules[0])
}

// GrantClusterAdmin binds subject to the built-in cluster-admin ClusterRole: the short way for
// tests whose subject's permissions are not what is under test.
func (cp *ControlPlane) GrantClusterAdmin(ctx context.Context, subject rbacv1.Subject) error {
	client, err := kubernetes.NewForConfig(cp.AdminConfig())
	if err != nil {
		return fmt.Errorf("build admin client: %w", err)
	}
	probe := rbacv1.PolicyRule{Verbs: []string{"delete"}, APIGroups: []string{"*"}, Resources: []string{"*"}}
	return bind(ctx, client, subject, "cluster-admin", probe)
}

// bind creates a ClusterRoleBinding of subject to role and waits until probe is allowed.
func bind(ctx context.Context, client kubernetes.Interface, subject rbacv1.Subject, role string, probe rbacv1.PolicyRule) error {
	_, err := client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "loopwatch-grant-"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{subject},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("grant %s %q: create cluster role binding: %w", subject.Kind, subject.Name, err)
	}
	review := accessReview(subject, probe)
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		res, err := client.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			return false, err
		}
		return res.Status.Allowed, nil
	})
	if err != nil {
		return fmt.Errorf("grant %s %q: wait until role %q applies: %w", subject.Kind, subject.Name, role, err)
	}
	return nil
}

// accessReview asks whether subject may do the first verb of rule on its first resource.
func accessReview(subject rbacv1.Subject, rule rbacv1.PolicyRule) *authorizationv1.SubjectAccessReview {
	spec := authorizationv1.SubjectAccessReviewSpec{Groups: []string{"system:authenticated"}}
	switch subject.Kind {
	case rbacv1.ServiceAccountKind:
		spec.User = "system:serviceaccount:" + subject.Namespace + ":" + subject.Name
		spec.Groups = append(spec.Groups, "system:serviceaccounts", "system:serviceaccounts:"+subject.Namespace)
	case rbacv1.GroupKind:
		spec.User = "loopwatch-probe"
		spec.Groups = append(spec.Groups, subject.Name)
	default:
		spec.User = subject.Name
	}
	first := func(s []string) string {
		if len(s) == 0 {
			return ""
		}
		return s[0]
	}
	if len(rule.NonResourceURLs) > 0 {
		spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: rule.NonResourceURLs[0], Verb: first(rule.Verbs)}
	} else {
		spec.ResourceAttributes = &authorizationv1.ResourceAttributes{
			Verb:     first(rule.Verbs),
			Group:    first(rule.APIGroups),
			Resource: first(rule.Resources),
		}
	}
	return &authorizationv1.SubjectAccessReview{Spec: spec}
}
