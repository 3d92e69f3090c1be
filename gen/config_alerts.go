package gen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// AlertConfig is what a user can change about one alert: the settings every alert has
// (disabled, severity, for) and the alert's own parameters, all in one YAML mapping:
//
//	queueBacklog: {depth: 500, for: 30m, severity: critical}
type AlertConfig struct {
	// Disabled drops the alert from the output.
	Disabled bool
	// Severity is the alert's severity label.
	Severity Severity
	// For is how long the condition must hold before the alert fires.
	For Duration
	// Values are the alert's parameters (see Alert.Params), by key.
	Values map[string]float64
}

// The settings every alert has, besides its own parameters.
const (
	settingDisabled = "disabled"
	settingSeverity = "severity"
	settingFor      = "for"
)

// AlertsConfig holds the settings of every declared alert, by alert key. A config file names only
// what it changes: decoding merges into the defaults field by field.
type AlertsConfig map[string]AlertConfig

// defaultAlerts returns every declared alert at its default settings.
func defaultAlerts() AlertsConfig {
	out := AlertsConfig{}
	for _, a := range Alerts() {
		c := AlertConfig{Severity: a.Severity, For: Duration(a.For), Values: map[string]float64{}}
		for _, p := range a.Params {
			c.Values[p.Key] = p.Default
		}
		out[a.Key] = c
	}
	return out
}

// SetFor sets the `for` duration of every alert but those in except, e.g. to shorten them in a
// demo.
func (c AlertsConfig) SetFor(d time.Duration, except ...*Alert) {
	for k, a := range c {
		if !slices.ContainsFunc(except, func(e *Alert) bool { return e.Key == k }) {
			a.For = Duration(d)
			c[k] = a
		}
	}
}

// MarshalJSON writes the settings as one flat mapping: disabled (when set), severity, for and the
// parameters.
func (c AlertConfig) MarshalJSON() ([]byte, error) {
	m := map[string]any{settingSeverity: c.Severity, settingFor: c.For}
	if c.Disabled {
		m[settingDisabled] = true
	}
	for k, v := range c.Values {
		m[k] = v
	}
	return json.Marshal(m)
}

// UnmarshalJSON merges a config file's alert settings into c, keeping what the file does not name.
// Unknown alerts and settings are errors; checkAlerts reports all of them with their paths before
// this runs.
func (c *AlertsConfig) UnmarshalJSON(b []byte) error {
	var raw map[string]map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	if *c == nil {
		*c = AlertsConfig{}
	}
	for _, key := range sortedKeys(raw) {
		a, ok := alertByKey(key)
		if !ok {
			return fmt.Errorf("unknown alert %q", key)
		}
		cur := (*c)[key]
		cur.Values = maps.Clone(cur.Values)
		if cur.Values == nil {
			cur.Values = map[string]float64{}
		}
		for _, field := range sortedKeys(raw[key]) {
			v := raw[key][field]
			var err error
			switch field {
			case settingDisabled:
				err = strictUnmarshal(v, &cur.Disabled)
			case settingSeverity:
				err = strictUnmarshal(v, &cur.Severity)
			case settingFor:
				err = strictUnmarshal(v, &cur.For)
			default:
				if _, ok := a.param(field); !ok {
					return fmt.Errorf("alert %q: unknown field %q", key, field)
				}
				var f float64
				err = strictUnmarshal(v, &f)
				cur.Values[field] = f
			}
			if err != nil {
				return fmt.Errorf("alerts.%s.%s: %w", key, field, err)
			}
		}
		(*c)[key] = cur
	}
	return nil
}

func strictUnmarshal(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

// checkAlerts reports every unknown alert, unknown setting and value of the wrong type in the
// decoded YAML of the alerts section, each with its path.
func checkAlerts(v *validator, doc any, path string) {
	m, ok := doc.(map[string]any)
	if !ok {
		v.add(path, "must be a mapping, got %v", doc)
		return
	}
	for _, key := range sortedKeys(m) {
		p := path + "." + key
		a, ok := alertByKey(key)
		if !ok {
			v.add(p, "unknown alert (known: %s)", strings.Join(alertKeys(), ", "))
			continue
		}
		fields, ok := m[key].(map[string]any)
		if !ok {
			v.add(p, "must be a mapping, got %v", m[key])
			continue
		}
		for _, field := range sortedKeys(fields) {
			fp, val := p+"."+field, fields[field]
			switch field {
			case settingDisabled:
				if _, ok := val.(bool); !ok {
					v.add(fp, "must be true or false, got %v", val)
				}
			case settingSeverity:
				if _, ok := val.(string); !ok {
					v.add(fp, "must be a string, got %v", val)
				}
			case settingFor:
				checkDuration(v, val, fp)
			default:
				if _, ok := a.param(field); !ok {
					v.add(fp, "unknown field (known: %s)", strings.Join(a.settingNames(), ", "))
				} else if _, ok := val.(float64); !ok {
					v.add(fp, "must be a number, got %v", val)
				}
			}
		}
	}
}

// checkDuration reports a value that is not a Prometheus duration string.
func checkDuration(v *validator, val any, path string) {
	s, ok := val.(string)
	if !ok {
		v.add(path, "must be a duration string like \"15m\", got %v", val)
		return
	}
	if _, err := model.ParseDuration(s); err != nil {
		v.add(path, "%v", err)
	}
}

// settingNames lists every setting of the alert, sorted: its parameters and the common ones.
func (a *Alert) settingNames() []string {
	names := []string{settingDisabled, settingFor, settingSeverity}
	for _, p := range a.Params {
		names = append(names, p.Key)
	}
	slices.Sort(names)
	return names
}

// validate reports every invalid setting with its path.
func (c AlertsConfig) validate(v *validator, path string) {
	for _, key := range sortedKeys(c) {
		if _, ok := alertByKey(key); !ok {
			v.add(path+"."+key, "unknown alert (known: %s)", strings.Join(alertKeys(), ", "))
		}
	}
	for _, a := range Alerts() {
		p := path + "." + a.Key
		s, ok := c[a.Key]
		if !ok {
			v.add(p, "missing (start from gen.Default())")
			continue
		}
		switch s.Severity {
		case SeverityCritical, SeverityWarning, SeverityInfo:
		default:
			v.add(p+".severity", "%q is not one of critical, warning, info", s.Severity)
		}
		if s.For < 0 {
			v.add(p+".for", "must not be negative")
		}
		for _, param := range a.Params {
			val, ok := s.Values[param.Key]
			if !ok {
				v.add(p+"."+param.Key, "missing")
				continue
			}
			v.number(p+"."+param.Key, val, param.Check)
		}
		for _, k := range sortedKeys(s.Values) {
			if _, ok := a.param(k); !ok {
				v.add(p+"."+k, "unknown field (known: %s)", strings.Join(a.settingNames(), ", "))
			}
		}
	}
}
