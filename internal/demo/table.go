package demo

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// WriteTable writes the results as a Markdown table: incident, expected alert, fired, time to
// detect, other alerts, diagnose's first cause; then the totals.
func WriteTable(w io.Writer, results []Result) {
	fmt.Fprintln(w, "| incident | expected alert | fired | time to detect | other alerts | diagnose (first cause) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	caught, incidents, others, diagnosed, right := 0, 0, 0, 0, 0
	var took time.Duration
	for _, r := range results {
		took += r.Took
		inc := r.Incident
		expected, fired, detect := "none (healthy)", "—", "—"
		if len(inc.Expect) > 0 {
			incidents++
			if r.Caught() {
				caught++
			}
			var e, f, d []string
			for _, a := range inc.Expect {
				e = append(e, a.FullName())
				switch t, ok := r.Fired[a.FullName()]; {
				case ok:
					f = append(f, "yes")
					d = append(d, t.String())
				case inc.Known[a] != "":
					f = append(f, "no — "+inc.Known[a])
					d = append(d, "—")
				default:
					f = append(f, "**no**")
					d = append(d, "—")
				}
			}
			expected, fired, detect = strings.Join(e, "<br>"), strings.Join(f, "<br>"), strings.Join(d, "<br>")
		}
		other := "none"
		if len(r.Others) > 0 {
			others += len(r.Others)
			other = "**" + strings.Join(r.Others, ", ") + "**"
		}
		if r.Err != nil {
			other += "<br>**error: " + strings.ReplaceAll(r.Err.Error(), "\n", " ") + "**"
		}
		diag := "—"
		if inc.Diagnosis != nil {
			diagnosed++
			switch d := r.Diagnosed; {
			case d == nil:
				diag = "**not run**"
			case d.Err != nil:
				diag = "**error: " + strings.ReplaceAll(d.Err.Error(), "\n", " ") + "**"
			case d.Right:
				right++
				diag = d.Said
			default:
				diag = fmt.Sprintf("**%s** (expected %s)", d.Said, inc.Diagnosis.want())
			}
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", inc.Name, expected, fired, detect, other, diag)
	}
	fmt.Fprintf(w, "\n%d/%d incidents caught (every expected alert fired), %d other alerts; diagnose right in %d/%d scenes; %d scenes in %s.\n",
		caught, incidents, others, right, diagnosed, len(results), took.Round(time.Second))
}
