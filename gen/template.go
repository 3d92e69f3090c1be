package gen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// A template is a string that may hold references to configuration parameters. The model is built
// once from templates; the YAML and JSON outputs resolve every reference to its value, while the
// jsonnet mixin keeps the references and resolves them at evaluation time from `_config`. Building
// both outputs from the same templates is what makes the mixin identical to the YAML by
// construction, and the go-jsonnet tests prove it.
//
// A reference is written ⟦name⟧ (a string parameter, substituted as is) or ⟦name:g⟧ (a number,
// formatted like Python's and jsonnet's "%g": six significant digits, no trailing zeros).
const (
	refOpen  = "⟦"
	refClose = "⟧"
)

// MixinParam is one value that users may override: in the generator's YAML config and in the mixin's
// `_config`.
type MixinParam struct {
	// Name is the key in the mixin's `_config`.
	Name string
	// Value is a string or a float64.
	Value any
}

// Params holds every parameter the model refers to, by name.
type Params struct {
	byName map[string]MixinParam
}

func newParams() *Params { return &Params{byName: map[string]MixinParam{}} }

// S declares a string parameter and returns a reference to it.
func (p *Params) S(name, value string) string {
	p.set(name, value)
	return refOpen + name + refClose
}

// G declares a number parameter and returns a reference to it.
func (p *Params) G(name string, value float64) string {
	p.set(name, value)
	return refOpen + name + ":g" + refClose
}

func (p *Params) set(name string, value any) {
	if old, ok := p.byName[name]; ok && old.Value != value {
		panic(fmt.Sprintf("parameter %q declared twice with different values (%v, %v)", name, old.Value, value))
	}
	p.byName[name] = MixinParam{Name: name, Value: value}
}

// Sorted returns every parameter ordered by name.
func (p *Params) Sorted() []MixinParam {
	out := make([]MixinParam, 0, len(p.byName))
	for _, v := range p.byName {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// formatG formats a number the way jsonnet's and Python's "%g" do.
func formatG(v float64) string {
	return strconv.FormatFloat(v, 'g', 6, 64)
}

// segment is a piece of a template: literal text, or a reference.
type segment struct {
	text   string
	ref    string
	number bool
}

func splitTemplate(s string) []segment {
	var out []segment
	for {
		i := strings.Index(s, refOpen)
		if i < 0 {
			if s != "" {
				out = append(out, segment{text: s})
			}
			return out
		}
		if i > 0 {
			out = append(out, segment{text: s[:i]})
		}
		rest := s[i+len(refOpen):]
		j := strings.Index(rest, refClose)
		if j < 0 {
			panic(fmt.Sprintf("unterminated parameter reference in %q", s))
		}
		name := rest[:j]
		seg := segment{ref: name}
		if n, ok := strings.CutSuffix(name, ":g"); ok {
			seg.ref, seg.number = n, true
		}
		out = append(out, seg)
		s = rest[j+len(refClose):]
	}
}

// Resolve replaces every reference in s by its value.
func (p *Params) Resolve(s string) string {
	if !strings.Contains(s, refOpen) {
		return s
	}
	var b strings.Builder
	for _, seg := range splitTemplate(s) {
		if seg.ref == "" {
			b.WriteString(seg.text)
			continue
		}
		param, ok := p.byName[seg.ref]
		if !ok {
			panic(fmt.Sprintf("reference to undeclared parameter %q", seg.ref))
		}
		switch v := param.Value.(type) {
		case string:
			b.WriteString(v)
		case float64:
			b.WriteString(formatG(v))
		}
	}
	return b.String()
}

// jsonnetString renders s as a jsonnet expression: a plain string literal, or, when it holds
// references, a Python-style format string applied to `$._config`.
func jsonnetString(s string) string {
	if !strings.Contains(s, refOpen) {
		return jsonnetQuote(s)
	}
	var b strings.Builder
	for _, seg := range splitTemplate(s) {
		switch {
		case seg.ref == "":
			b.WriteString(strings.ReplaceAll(seg.text, "%", "%%"))
		case seg.number:
			b.WriteString("%(" + seg.ref + ")g")
		default:
			b.WriteString("%(" + seg.ref + ")s")
		}
	}
	return jsonnetQuote(b.String()) + " % $._config"
}

// jsonnetQuote quotes s as a jsonnet (JSON-compatible) string literal.
func jsonnetQuote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		panic(err) // a Go string always encodes
	}
	return strings.TrimSuffix(b.String(), "\n")
}
