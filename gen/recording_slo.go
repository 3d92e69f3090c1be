package gen

import "time"

// burnWindows lists the error-ratio windows the SLO rules record (5m is recorded by the
// controller group).
var burnWindows = []string{"30m", "1h", "2h", "6h", "1d", "3d"}

// sloRecordings record the error ratio over each burn window.
var sloRecordings = func() []*Recording {
	var out []*Recording
	for _, w := range burnWindows {
		out = append(out, &Recording{
			Name:  recErrorRatioName(w),
			Expr:  func(e *exprEnv) string { return errorRatio(e.Selector("controller"), w) },
			Cases: func(c *caseEnv) []ExprCase { return errorRatioCase(c, 10*time.Minute) },
		})
	}
	return out
}()
