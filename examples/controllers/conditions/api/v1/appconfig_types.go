package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types of an AppConfig.
const (
	// ConditionConfigMapFound is True when the ConfigMap named by spec.configMapName exists.
	ConditionConfigMapFound = "ConfigMapFound"
	// ConditionReady is True when the ConfigMap exists and holds every required key.
	ConditionReady = "Ready"
)

// AppConfigSpec names the ConfigMap an application needs and the keys it must hold.
type AppConfigSpec struct {
	// configMapName is the ConfigMap, in the AppConfig's namespace.
	// +kubebuilder:validation:MinLength=1
	ConfigMapName string `json:"configMapName"`

	// requiredKeys must all be present in the ConfigMap's data.
	// +listType=set
	// +optional
	RequiredKeys []string `json:"requiredKeys,omitempty"`
}

// AppConfigStatus reports whether the demand is met.
type AppConfigStatus struct {
	// conditions: ConfigMapFound and Ready, each with the generation it was computed for.
	// Other controllers may add conditions of their own types.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the generation the status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// AppConfig is an application's demand for configuration.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
type AppConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   AppConfigSpec   `json:"spec"`
	Status AppConfigStatus `json:"status,omitempty"`
}

// AppConfigList is a list of AppConfigs.
//
// +kubebuilder:object:root=true
type AppConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AppConfig `json:"items"`
}

func init() {
	SchemeBuilder.Register(&AppConfig{}, &AppConfigList{})
}
