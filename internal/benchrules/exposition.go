package benchrules

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ContentType is the exposition format the targets serve: the Prometheus text format, which
// carries the classic histogram buckets the rules read.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// AppendExposition appends the target's exposition at time now to buf.
func (t *Target) AppendExposition(buf []byte, now time.Time) []byte {
	ts := float64(now.UnixNano()) / 1e9
	for _, f := range t.Families {
		if f.Help != "" {
			buf = append(buf, "# HELP "...)
			buf = append(buf, f.Name...)
			buf = append(buf, ' ')
			buf = append(buf, helpEscaper.Replace(f.Help)...)
			buf = append(buf, '\n')
		}
		buf = append(buf, "# TYPE "...)
		buf = append(buf, f.Name...)
		buf = append(buf, ' ')
		buf = append(buf, f.Type...)
		buf = append(buf, '\n')
		for _, s := range f.Series {
			buf = append(buf, s.line...)
			buf = append(buf, ' ')
			buf = appendFloat(buf, s.v.at(ts))
			buf = append(buf, '\n')
		}
	}
	return buf
}

// Handler serves every target's exposition at its Path, computed at request time.
func (f *Fleet) Handler() http.Handler {
	byPath := make(map[string]*Target, len(f.Targets))
	for _, t := range f.Targets {
		byPath[t.Path] = t
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t, ok := byPath[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", ContentType)
		_, _ = w.Write(t.AppendExposition(make([]byte, 0, 16<<10), time.Now()))
	})
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	valueEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
)

// quote quotes a label value for the text format.
func quote(v string) string { return `"` + valueEscaper.Replace(v) + `"` }

// exposedFloat formats a bucket bound as client_golang does in the text format.
func exposedFloat(f float64) string {
	if math.IsInf(f, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func appendFloat(buf []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(buf, "+Inf"...)
	case math.IsInf(f, -1):
		return append(buf, "-Inf"...)
	case math.IsNaN(f):
		return append(buf, "NaN"...)
	}
	return strconv.AppendFloat(buf, f, 'g', -1, 64)
}
