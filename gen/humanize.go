package gen

import (
	"fmt"
	"math"
	"text/template"

	"github.com/prometheus/common/helpers/templates"
)

// alertTemplateFuncs are the template functions loopwatch's annotations use, with the output of
// Prometheus' own (prometheus/template): generated tests render the expected annotations with
// them. humanize_test.go checks them against Prometheus.
var alertTemplateFuncs = template.FuncMap{
	"humanize":           humanize,
	"humanizePercentage": func(v float64) string { return fmt.Sprintf("%.4g%%", v*100) },
	"humanizeDuration":   templates.HumanizeDuration,
}

// humanize writes v with four significant digits and an SI prefix: 9653 is "9.653k", 0.002 "2m".
func humanize(v float64) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Sprintf("%.4g", v)
	}
	prefix := ""
	if math.Abs(v) >= 1 {
		for _, p := range []string{"k", "M", "G", "T", "P", "E", "Z", "Y"} {
			if math.Abs(v) < 1000 {
				break
			}
			prefix, v = p, v/1000
		}
	} else {
		for _, p := range []string{"m", "u", "n", "p", "f", "a", "z", "y"} {
			if math.Abs(v) >= 1 {
				break
			}
			prefix, v = p, v*1000
		}
	}
	return fmt.Sprintf("%.4g%s", v, prefix)
}
