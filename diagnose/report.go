package diagnose

import (
	"bytes"
	"encoding/json"
	"math"
	"time"
)

// SchemaVersion is the version of the JSON report. It changes only when a field is removed,
// renamed or changes meaning; new fields may appear within a version (docs/diagnose.md).
const SchemaVersion = 1

// Report is the diagnosis of every controller found (or the one asked for). Every field is always
// present in the JSON form, empty when there is nothing to say, so its shape does not depend on
// the findings.
type Report struct {
	// SchemaVersion is SchemaVersion.
	SchemaVersion int `json:"schemaVersion"`
	// Prometheus is the base URL that was queried.
	Prometheus string `json:"prometheus"`
	// Window is the time range the playbook looked at.
	Window Window `json:"window"`
	// RecordingRules says which of loopwatch's recording rules were read as recorded series and
	// which were computed from the raw metrics because Prometheus does not have them.
	RecordingRules RecordingRules `json:"recordingRules"`
	// Notes are facts about the data that limit the diagnosis, e.g. that no audit exporter
	// metrics exist, so write fights were not checked.
	Notes []string `json:"notes"`
	// Controllers are the controllers found, ordered by cluster, namespace, job and name.
	Controllers []Controller `json:"controllers"`
	// Unattributed are findings that belong to no controller found: a write fight between
	// actors that are not scraped controllers, an audit pipeline losing events, a target that
	// exports no controller metrics.
	Unattributed []Cause `json:"unattributed"`
}

// AllHealthy reports whether nothing in the report needs attention: every controller reported is
// healthy and no finding was left without a controller (a write fight between actors that are
// not scraped controllers still breaks something; an audit pipeline losing events hides them).
func (r Report) AllHealthy() bool {
	for _, c := range r.Controllers {
		if c.Verdict != Healthy {
			return false
		}
	}
	return len(r.Unattributed) == 0
}

// Window is the time range of a diagnosis.
type Window struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// StepSeconds is the resolution at which conditions were evaluated over the window.
	StepSeconds float64 `json:"stepSeconds"`
}

// RecordingRules lists loopwatch's recording rules by how they were read.
type RecordingRules struct {
	// Recorded are the rules whose series Prometheus has: read as is.
	Recorded []string `json:"recorded"`
	// Inlined are the rules whose series Prometheus does not have: replaced by their
	// expressions over the raw metrics.
	Inlined []string `json:"inlined"`
}

// Verdict is the conclusion for one controller.
type Verdict string

// Verdicts.
const (
	// Healthy: no check that ran on data found a failure, on a reconcile counter that is there
	// and recent. Checks that could not run (a monitoring gap, series missing) are listed as
	// no-data with why, and the headline names them.
	Healthy Verdict = "healthy"
	// Unhealthy: at least one failure holds or held in the window (see Controller.Causes).
	Unhealthy Verdict = "unhealthy"
	// InsufficientData: no failure found, and the controller's reconcile counter stopped within
	// the window or has too few samples for a rate: nothing can be judged on it.
	InsufficientData Verdict = "insufficient-data"
)

// Controller is the diagnosis of one controller of one workload.
type Controller struct {
	Cluster   string  `json:"cluster"`
	Namespace string  `json:"namespace"`
	Job       string  `json:"job"`
	Name      string  `json:"controller"`
	Verdict   Verdict `json:"verdict"`
	// Headline is the verdict in one sentence.
	Headline string `json:"headline"`
	// Causes are the failures found, the most likely cause first, then contributing causes,
	// then symptoms explained by one of them, then the monitoring gaps found (role gap).
	Causes []Cause `json:"causes"`
	// Signals are the controller's key numbers at the end of the window, whatever the verdict:
	// a healthy verdict stands on them.
	Signals []Evidence `json:"signals"`
	// Checks are every check of the playbook and its result for this controller.
	Checks []CheckResult `json:"checks"`
}

// Role is a cause's place in the ranking.
type Role string

// Roles.
const (
	// RoleCause is the most likely cause: the first of Controller.Causes.
	RoleCause Role = "cause"
	// RoleContributing is another failure that no other failure explains.
	RoleContributing Role = "contributing"
	// RoleSymptom is a failure another failure of the list explains (see Cause.ExplainedBy).
	RoleSymptom Role = "symptom"
	// RoleGap is a monitoring gap of the controller, not a failure of it: the checks it keeps
	// from running are listed as no-data, with the gap named (see CheckResult.Detail).
	RoleGap Role = "gap"
)

// Status says when a failure held.
type Status string

// Statuses.
const (
	// StatusActive: the condition holds at the end of the window.
	StatusActive Status = "active"
	// StatusEarlier: the condition held in the window but no longer does.
	StatusEarlier Status = "earlier"
)

// Cause is one failure found: a loopwatch alert's condition holding for the controller.
type Cause struct {
	// Alert is the name of the alert whose condition holds, e.g. LoopwatchWriteFight.
	Alert string `json:"alert"`
	// Role is the cause's place in the ranking.
	Role Role `json:"role"`
	// ExplainedBy is the alert of the cause that explains this symptom; empty unless Role is
	// RoleSymptom.
	ExplainedBy string `json:"explainedBy"`
	Status      Status `json:"status"`
	// Severity is the alert's configured severity.
	Severity string `json:"severity"`
	// Summary and Description are the alert's annotations, rendered for the strongest instance.
	Summary     string `json:"summary"`
	Description string `json:"description"`
	// Labels are the alert labels of the strongest instance (the pod, the object, the actors).
	Labels map[string]string `json:"labels"`
	// Instances is how many alert instances (label sets) held in the window.
	Instances int `json:"instances"`
	// Actors are the audit actors involved (service accounts, users), for audit findings.
	Actors []string `json:"actors"`
	// Attribution says how the finding was tied to this controller: "controller" (the series
	// names it), "process" (a per-pod signal, given to the busiest controller of the workload),
	// "workload" (every controller of the workload), "actor" (an audit actor matched to the
	// workload, and its resource to the controller) or "none" (unattributed).
	Attribution string `json:"attribution"`
	// Join says, for an audit finding ("actor"), how its actor was matched to the controller's
	// workload: "pod" (the pod its writes came from is a scraped target of the workload),
	// "serviceaccount" (kube-state-metrics says a pod of the workload runs as its service account)
	// or "name" (the workload's job is named like its service account: a guess); empty otherwise.
	// JoinDetail says it in a sentence: which pod, service account and job.
	Join       string `json:"join"`
	JoinDetail string `json:"joinDetail"`
	// Value is the alert expression's value for the strongest instance when it last held.
	Value *float64 `json:"value"`
	// Threshold is the alert's threshold that Value is compared with, when it has one.
	Threshold *float64 `json:"threshold"`
	// FirstSeen and LastSeen bound the last stretch of the window during which the condition
	// held without interruption; HeldSeconds is its length.
	FirstSeen   time.Time `json:"firstSeen"`
	LastSeen    time.Time `json:"lastSeen"`
	HeldSeconds float64   `json:"heldSeconds"`
	// ForSeconds is the alert's configured `for`: once HeldSeconds reaches it the alert fires.
	ForSeconds float64 `json:"forSeconds"`
	// Query is the PromQL of the condition that was evaluated.
	Query string `json:"query"`
	// Evidence are the numbers behind the finding, at LastSeen, each with its PromQL.
	Evidence []Evidence `json:"evidence"`
	// NextStep says what to look at or change next.
	NextStep string `json:"nextStep"`
	// Runbook is the alert's runbook URL.
	Runbook string `json:"runbook"`
	// Panel is the dashboard panel that shows the signal, "Dashboard › Panel".
	Panel string `json:"panel"`
}

// Unit is how to read an Evidence value.
type Unit string

// Units.
const (
	UnitRatio     Unit = "ratio"      // a share between 0 and 1
	UnitSeconds   Unit = "seconds"    // a duration
	UnitPerSecond Unit = "per-second" // a rate
	UnitCount     Unit = "count"      // items, calls, replicas, handoffs
)

// Evidence is one number and the query that produced it.
type Evidence struct {
	// Signal names the number, e.g. "queue depth".
	Signal string `json:"signal"`
	// Value is null when the query returned nothing for this controller at that time (or a
	// value that is not a finite number).
	Value *float64 `json:"value"`
	Unit  Unit     `json:"unit"`
	// Compare and Threshold are the alert's condition on this signal ("" and null when the
	// signal is context, not a condition); Threshold is null too when the signal is compared
	// with another signal.
	Compare   string   `json:"compare"`
	Threshold *float64 `json:"threshold"`
	// Labels are the series' labels.
	Labels map[string]string `json:"labels"`
	// Query is the PromQL that produced the series.
	Query string `json:"query"`
}

// CheckResult is the result of one check of the playbook for one controller.
type CheckResult struct {
	// Alert names the check by the alert it corresponds to.
	Alert  string      `json:"alert"`
	Result CheckStatus `json:"result"`
	// Detail says why a check did not run: the monitoring gap that keeps it from running
	// ("cannot run: its workqueue series carry no controller label (...)"), or the series it
	// lacks ("no workqueue_depth series ...").
	Detail string `json:"detail"`
}

// CheckStatus is the result of a check.
type CheckStatus string

// Check results.
const (
	// CheckOK: the check ran on data and the condition did not hold.
	CheckOK CheckStatus = "ok"
	// CheckHolds: the condition held in the window (the finding is among the causes).
	CheckHolds CheckStatus = "holds"
	// CheckNoData: a metric the check needs is missing for this controller.
	CheckNoData CheckStatus = "no-data"
	// CheckNotApplicable: an optional source is absent (no audit exporter, no leader election,
	// controller not instrumented for finalizers): nothing to check.
	CheckNotApplicable CheckStatus = "not-applicable"
	// CheckDisabled: the config disables the alert or its group.
	CheckDisabled CheckStatus = "disabled"
)

// Find returns the diagnosis of controller name of workload namespace/job.
func (r Report) Find(namespace, job, name string) (Controller, bool) {
	for _, c := range r.Controllers {
		if c.Namespace == namespace && c.Job == job && c.Name == name {
			return c, true
		}
	}
	return Controller{}, false
}

// FirstCause returns the alert name of the most likely cause, or "" when there is none.
func (c Controller) FirstCause() string {
	if len(c.Causes) == 0 {
		return ""
	}
	return c.Causes[0].Alert
}

// number returns v as a JSON-safe value: nil for NaN and infinities.
func number(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// JSON writes the report as indented JSON with every field present.
func (r Report) JSON() ([]byte, error) {
	r.normalize()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // PromQL is full of < and >
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// normalize turns nil slices and maps into empty ones, so that the JSON has [] and {} instead of
// null where a list or a map is expected.
func (r *Report) normalize() {
	r.Notes = nonNil(r.Notes)
	r.RecordingRules.Recorded = nonNil(r.RecordingRules.Recorded)
	r.RecordingRules.Inlined = nonNil(r.RecordingRules.Inlined)
	r.Controllers = nonNil(r.Controllers)
	r.Unattributed = nonNil(r.Unattributed)
	for i := range r.Unattributed {
		r.Unattributed[i].normalize()
	}
	for i := range r.Controllers {
		c := &r.Controllers[i]
		c.Causes = nonNil(c.Causes)
		c.Signals = nonNil(c.Signals)
		c.Checks = nonNil(c.Checks)
		for j := range c.Causes {
			c.Causes[j].normalize()
		}
		for j := range c.Signals {
			c.Signals[j].normalize()
		}
	}
}

func (c *Cause) normalize() {
	if c.Labels == nil {
		c.Labels = map[string]string{}
	}
	c.Actors = nonNil(c.Actors)
	c.Evidence = nonNil(c.Evidence)
	for i := range c.Evidence {
		c.Evidence[i].normalize()
	}
}

func (e *Evidence) normalize() {
	if e.Labels == nil {
		e.Labels = map[string]string{}
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
