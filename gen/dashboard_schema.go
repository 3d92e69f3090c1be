package gen

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// Grafana's own dashboard schema, as the foundation SDK generates it from the schemas Grafana
// validates dashboards with: no Grafana server can run in the project's tests, so this is the
// closest check of what Grafana makes of a generated dashboard.

// registerPanelSchemas registers the panel plugins' option schemas with the foundation SDK, once:
// without them a panel's options and field config decode as untyped JSON, unchecked.
var registerPanelSchemas = sync.OnceFunc(plugins.RegisterDefaultPlugins)

// DecodeDashboard decodes a dashboard's JSON strictly with Grafana's schema types and validates
// it: an unknown or legacy field anywhere (rows, style, slug, __inputs, a panel's span or isNew,
// a pre-Grafana-9 heatmap's cards or yAxis, an old table's styles), a field of the wrong type (a
// variable's refresh as a boolean), a missing required field (a legend's showLegend) or a value
// out of its bounds is an error naming its path. A panel whose type has no schema is an error
// too: its options would not be checked.
//
// The strict decoder of foundation SDK v0.0.22 finds every problem but returns a value without
// the parts that had none: its decoders return their (empty) error lists as non-nil errors, and
// a union (a panel or a row) or a variant (a panel's options, a query) whose decoder returned one
// is left out. So the strict decode only reports, and the value validated and returned is decoded
// by the SDK's lenient decoder from the same bytes.
func DecodeDashboard(raw []byte) (*dashboard.Dashboard, error) {
	registerPanelSchemas()
	var strict dashboard.Dashboard
	if err := schemaError(strict.UnmarshalJSONStrict(raw)); err != nil {
		return nil, fmt.Errorf("grafana's dashboard schema: %w", err)
	}
	var d dashboard.Dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("grafana's dashboard schema: %w", err)
	}
	if err := schemaError(d.Validate()); err != nil {
		return nil, fmt.Errorf("grafana's dashboard schema: %w", err)
	}
	var errs []error
	checkType := func(path, typ string) {
		if _, ok := cog.ConfigForPanelcfgVariant(typ); !ok {
			errs = append(errs, fmt.Errorf("%s: panel type %q has no schema", path, typ))
		}
	}
	for i, p := range d.Panels {
		path := "panels[" + strconv.Itoa(i) + "]"
		switch {
		case p.Panel != nil:
			checkType(path, p.Panel.Type)
		case p.RowPanel != nil:
			for j, n := range p.RowPanel.Panels {
				checkType(path+".panels["+strconv.Itoa(j)+"]", n.Type)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("grafana's dashboard schema: %w", err)
	}
	return &d, nil
}

// schemaError returns err, or nil for an empty cog.BuildErrors: the foundation SDK's strict
// decoders (v0.0.22) return their error list as it is, so a dashboard without errors comes back
// as a non-nil error holding none.
func schemaError(err error) error {
	var list cog.BuildErrors
	if errors.As(err, &list) && len(list) == 0 {
		return nil
	}
	return err
}
