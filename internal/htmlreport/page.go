package htmlreport

import (
	"bufio"
	_ "embed" // the style sheet and the sorting script are inlined in every page
	"fmt"
	"html"
	"io"
	"strconv"
	"strings"
	"time"
)

//go:embed style.css
var styleSheet string

//go:embed sort.js
var sortScript string

// Writer writes one HTML document. It remembers the first write error (Err), so a report is
// written without checking every call.
type Writer struct {
	w   *bufio.Writer
	err error
}

// NewWriter returns a Writer on w; Close flushes it.
func NewWriter(w io.Writer) *Writer { return &Writer{w: bufio.NewWriterSize(w, 64<<10)} }

// Raw writes s as it is: markup the caller built from constants and escaped values.
func (w *Writer) Raw(s string) {
	if w.err == nil {
		_, w.err = w.w.WriteString(s)
	}
}

// Rawf writes a formatted piece of markup; its arguments are not escaped, so give it numbers
// and strings that went through Esc.
func (w *Writer) Rawf(format string, args ...any) {
	if w.err == nil {
		_, w.err = fmt.Fprintf(w.w, format, args...)
	}
}

// Text writes s escaped for text and attribute values.
func (w *Writer) Text(s string) { w.Raw(html.EscapeString(s)) }

// Esc escapes s for text and attribute values.
func Esc(s string) string { return html.EscapeString(s) }

// Num formats a coordinate or a number for an attribute: at most two decimals, no exponent.
func Num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// Coord formats an SVG coordinate with one decimal: a tenth of a pixel is finer than any
// screen or printer needs, and it keeps pages with many marks small.
func Coord(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// Begin writes the document's head, with the style sheet and the sorting script, and opens
// its body with the title as heading.
func (w *Writer) Begin(title, subtitle string) {
	w.Raw("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
	w.Raw("<meta name=\"generator\" content=\"loopwatch\">\n<title>")
	w.Text(title)
	w.Raw("</title>\n<style>\n")
	w.Raw(styleSheet)
	w.Raw("</style>\n</head>\n<body>\n<header>\n<h1>")
	w.Text(title)
	w.Raw("</h1>\n")
	if subtitle != "" {
		w.Raw("<p class=\"muted\">")
		w.Text(subtitle)
		w.Raw("</p>\n")
	}
	w.Raw("</header>\n<main>\n")
}

// End closes the body, after the sorting script, and flushes the document.
func (w *Writer) End() error {
	w.Raw("</main>\n<script>\n")
	w.Raw(sortScript)
	w.Raw("</script>\n</body>\n</html>\n")
	if w.err == nil {
		w.err = w.w.Flush()
	}
	return w.err
}

// Err is the first write error.
func (w *Writer) Err() error { return w.err }

// Note writes a highlighted paragraph: what the reader must know to read the report right (a
// limit that was reached, data that was aggregated).
func (w *Writer) Note(text string) {
	w.Raw("<p class=\"note\" role=\"note\">")
	w.Text(text)
	w.Raw("</p>\n")
}

// Card is one number of a report's summary.
type Card struct {
	Value string
	Label string
}

// Cards writes the summary numbers.
func (w *Writer) Cards(cards []Card) {
	w.Raw("<div class=\"cards\">\n")
	for _, c := range cards {
		w.Raw("<div class=\"card\"><b>")
		w.Text(c.Value)
		w.Raw("</b><span>")
		w.Text(c.Label)
		w.Raw("</span></div>\n")
	}
	w.Raw("</div>\n")
}

// Column is a table column.
type Column struct {
	Name string
	// Numeric columns are right-aligned and sort by their cells' values.
	Numeric bool
}

// Cell is one table cell: its text, and for numeric columns the value it sorts by.
type Cell struct {
	Text  string
	Value float64
	// HTML, when set, is written instead of Text (markup the caller escaped).
	HTML string
	// NoWrap keeps the cell on one line (times).
	NoWrap bool
}

// Time is a cell showing t to the millisecond (the date above the time, each on one line),
// sorting by t.
func Time(t time.Time) Cell {
	c := Cell{Text: Stamp(t), Value: float64(t.UnixMilli()) / 1000, NoWrap: true}
	if !t.IsZero() {
		c.HTML = t.UTC().Format("2006-01-02") + "<br>" + t.UTC().Format("15:04:05.000")
	}
	return c
}

// T is a text cell.
func T(s string) Cell { return Cell{Text: s} }

// N is a numeric cell showing v as an integer.
func N(v int) Cell { return Cell{Text: strconv.Itoa(v), Value: float64(v)} }

// F is a numeric cell showing text and sorting by v.
func F(text string, v float64) Cell { return Cell{Text: text, Value: v} }

// Table writes a sortable table (id names it for a #sort=<id>.<column>.<asc|desc> link). It
// writes at most maxRows rows and says how many more there were; Table returns how many it wrote.
func (w *Writer) Table(id, caption string, cols []Column, rows [][]Cell, maxRows int) int {
	w.Rawf("<table class=\"sortable\" id=\"%s\" data-rows=\"%d\">\n<caption class=\"sr\">", Esc(id), min(len(rows), maxRows))
	w.Text(caption)
	w.Raw("</caption>\n<thead><tr>")
	for _, c := range cols {
		if c.Numeric {
			w.Raw("<th class=\"n\" scope=\"col\"><button type=\"button\">")
		} else {
			w.Raw("<th scope=\"col\"><button type=\"button\">")
		}
		w.Text(c.Name)
		w.Raw("</button></th>")
	}
	w.Raw("</tr></thead>\n<tbody>\n")
	n := 0
	for _, r := range rows {
		if n == maxRows {
			break
		}
		n++
		w.Raw("<tr>")
		for i, c := range r {
			switch {
			case i < len(cols) && cols[i].Numeric:
				w.Rawf("<td class=\"n\" data-v=\"%s\">", Num(c.Value))
			case c.NoWrap:
				w.Rawf("<td class=\"nw\" data-v=\"%s\">", Num(c.Value))
			default:
				w.Raw("<td>")
			}
			if c.HTML != "" {
				w.Raw(c.HTML)
			} else {
				w.Text(c.Text)
			}
			w.Raw("</td>")
		}
		w.Raw("</tr>\n")
	}
	w.Raw("</tbody>\n</table>\n")
	if len(rows) > n {
		w.Note(fmt.Sprintf("%d more rows are not shown here (the report keeps at most %d per table): the text and JSON reports list them all.", len(rows)-n, maxRows))
	}
	return n
}

// Slug turns s into an id fragment: letters, digits and dashes.
func Slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}
