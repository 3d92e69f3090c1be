// Package htmlreport holds what loopwatch's HTML reports share (`loopwatch audit analyze --html`
// and `loopwatch diagnose -o html`): the page around a report, its inline style sheet and table
// sorting script, sortable tables, and the SVG pieces charts are drawn with (a time axis, bar and
// line charts). A report is one self-contained file: no script, style sheet, font or image is
// fetched from anywhere, so it opens from file://, in a mail attachment or an air-gapped
// incident room, and prints on paper.
//
// Every chart carries a text alternative (an SVG title and description, and the numbers in a
// table or list beside it), and nothing is told by colour alone: lanes and series are labelled
// and drawn with distinct shapes or dashes.
package htmlreport
