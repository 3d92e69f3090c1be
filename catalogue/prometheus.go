package catalogue

// Up is written by Prometheus itself for every scrape target, with the target's labels (job,
// instance and those added by relabelling) and none of its own; a target never exposes it. The
// rules read it to tell "target down" from "metric missing".
var Up = Metric{
	Name: "up", Type: Gauge, Source: SourcePrometheus,
	Help: "1 if the last scrape of the target succeeded, 0 if it failed.",
}

var prometheusMetrics = []Metric{Up}
