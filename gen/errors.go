package gen

// reconcileErrorsAlert fires on the result="error" share of reconciles. It reads
// controller_runtime_reconcile_total{result}, not workqueue_retries_total: retries also count
// every RequeueAfter, so a healthy controller on a schedule would look like an error storm.
func (b *builder) reconcileErrorsAlert() []Rule {
	a := b.cfg.Alerts.ReconcileErrors
	expr := recErrorRatio5m + " > " + b.p.G("reconcileErrorsThreshold", a.Threshold)
	return b.alert("reconcileErrors", "ReconcileErrors", a.Common, expr,
		"A controller's reconciles fail.",
		"{{ $value | humanizePercentage }} of the reconciles of "+whereController+" return an error. Read the controller's logs for the error.")
}
