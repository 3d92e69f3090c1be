package benchrules

import "github.com/loopwatch/loopwatch/internal/results"

// ResultsTable is the rule-cost table of docs/performance.md: `make bench-rules` measures the
// committed rule file and writes its report there, with the JSON report in docs/results/.
var ResultsTable = results.Table{Name: "bench-rules", Page: "docs/performance.md", Command: "make bench-rules"}
