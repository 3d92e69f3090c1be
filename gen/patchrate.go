package gen

// patchRateAlert fires when a controller process sends PATCH requests faster than a threshold
// (seed 002: 10/s sustained). client-go's request metric has no controller label, so the rate
// is per scrape target.
func (b *builder) patchRateAlert() []Rule {
	a := b.cfg.Alerts.PatchRate
	expr := recClientRequests + `{method="PATCH"} > ` + b.p.G("patchRateThreshold", a.Threshold)
	return b.alert("patchRate", "PatchRateHigh", a.Common, expr,
		"A controller sends PATCH requests at a high rate.",
		"The "+whereTarget+" sends {{ $value | printf \"%.2f\" }} PATCH requests per second. A write that changes nothing, or a field other writers change back, keeps it busy: compare with the audit exporter's writes by actor.")
}
