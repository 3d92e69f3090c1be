package browser

import (
	"slices"
	"strings"

	"golang.org/x/net/html"
)

// Node is an element of a DOM as Chromium serialised it.
type Node struct{ *html.Node }

// ParseDOM parses a serialised DOM.
func ParseDOM(s string) (Node, error) {
	n, err := html.Parse(strings.NewReader(s))
	return Node{n}, err
}

// Attr is the element's attribute name, "" when absent.
func (n Node) Attr(name string) string {
	for _, a := range n.Node.Attr {
		if a.Key == name {
			return a.Val
		}
	}
	return ""
}

// Has reports whether the element has the attribute.
func (n Node) Has(name string) bool {
	return slices.ContainsFunc(n.Node.Attr, func(a html.Attribute) bool { return a.Key == name })
}

// HasClass reports whether the element's class list has c.
func (n Node) HasClass(c string) bool { return slices.Contains(strings.Fields(n.Attr("class")), c) }

// Tag is the element's name.
func (n Node) Tag() string { return n.Data }

// All returns the elements under n (n included) that match.
func (n Node) All(match func(Node) bool) []Node {
	var out []Node
	var walk func(*html.Node)
	walk = func(h *html.Node) {
		if h.Type == html.ElementNode && match(Node{h}) {
			out = append(out, Node{h})
		}
		for c := h.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n.Node)
	return out
}

// ByID returns the element of that id.
func (n Node) ByID(id string) (Node, bool) {
	all := n.All(func(x Node) bool { return x.Attr("id") == id })
	if len(all) == 0 {
		return Node{}, false
	}
	return all[0], true
}

// Text is the element's text content.
func (n Node) Text() string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(h *html.Node) {
		if h.Type == html.TextNode {
			b.WriteString(h.Data)
		}
		for c := h.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n.Node)
	return strings.TrimSpace(b.String())
}

// Tagged matches elements by name and, optionally, class.
func Tagged(tag string, class ...string) func(Node) bool {
	return func(n Node) bool {
		if n.Data != tag {
			return false
		}
		for _, c := range class {
			if !n.HasClass(c) {
				return false
			}
		}
		return true
	}
}

// Rows are the body rows of a table.
func (n Node) Rows() []Node {
	return n.All(func(x Node) bool {
		return x.Data == "tr" && x.Parent != nil && x.Parent.Data == "tbody"
	})
}
