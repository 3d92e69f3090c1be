package gen

import (
	"strings"

	"github.com/grafana-tools/sdk"
)

// Dashboards are built as typed grafana-tools/sdk values from small specs: each dashboard's rows
// of panels and their queries live in dashboard_<key>.go, the layout (rows of panels on Grafana's
// 24-column grid) here. A panel's description names the alerts that watch its signal (each
// alert declares its panel).

// Dashboard is one generated Grafana dashboard. Its strings may refer to Params.
type Dashboard struct {
	// Key names the dashboard in the config (dashboards.uids) and in file names.
	Key   string
	Title string
	Board *sdk.Board
}

// FileName is the dashboard's file name in dashboards/ and its key in the mixin's
// grafanaDashboards.
func (d Dashboard) FileName() string { return "loopwatch-" + d.Key + ".json" }

// panelKind is the Grafana panel type.
type panelKind string

const (
	kindTimeseries panelKind = "timeseries"
	kindHeatmap    panelKind = "heatmap"
	kindStat       panelKind = "stat"
	kindTable      panelKind = "table"
)

// panelSpec describes one panel; the layout places it.
type panelSpec struct {
	title       string
	description string
	kind        panelKind
	unit        string
	// width in grid columns (of 24); 0 means 12.
	width   int
	targets []targetSpec
}

// targetSpec is one query of a panel.
type targetSpec struct {
	expr   string
	legend string
	// instant queries feed tables.
	instant bool
}

// rowSpec is a titled row of panels.
type rowSpec struct {
	title  string
	panels []panelSpec
}

// variableSpec is a query template variable: label_values(query, label).
type variableSpec struct {
	name, label, query, valueLabel string
}

const (
	panelHeight  = 8
	gridWidth    = 24
	defaultWidth = 12
	// datasourceRef is how every panel and variable names the datasource: the dashboard's
	// own datasource variable.
	datasourceVar = "${datasource}"
)

func datasource() map[string]string {
	return map[string]string{"type": "prometheus", "uid": datasourceVar}
}

// newDashboard lays out rows of panels with unique ids and non-overlapping grid positions.
func (b *builder) newDashboard(key, title, description string, vars []variableSpec, rows []rowSpec) Dashboard {
	board := sdk.NewBoard(title)
	board.ID = 0
	board.UID = b.p.S(key+"DashboardUID", b.cfg.Dashboards.UIDs[key])
	board.Slug = ""
	board.Tags = append([]string{}, b.cfg.Dashboards.Tags...)
	board.Timezone = "utc"
	board.Editable = true
	board.SchemaVersion = 39
	board.Version = 1
	board.Time = sdk.Time{From: "now-3h", To: "now"}
	board.Timepicker = sdk.Timepicker{RefreshIntervals: []string{"30s", "1m", "5m", "15m"}, TimeOptions: []string{}}
	board.GraphTooltip = 1
	refresh := sdk.BoolString{Flag: true, Value: b.cfg.Dashboards.Refresh}
	board.Refresh = &refresh
	board.Links = []sdk.Link{}
	board.Annotations.List = []sdk.Annotation{}
	board.Rows = nil
	board.Templating.List = b.templateVars(vars)
	if description != "" {
		board.Panels = append(board.Panels, textPanel(description))
	}

	y := 0
	if description != "" {
		y = 3
	}
	var id uint = 1
	for _, r := range rows {
		row := &sdk.Panel{
			CommonPanel: sdk.CommonPanel{OfType: sdk.RowType, Type: "row", Title: r.title, ID: id},
			RowPanel:    &sdk.RowPanel{Panels: []sdk.Panel{}},
		}
		setGrid(row, 0, y, gridWidth, 1)
		board.Panels = append(board.Panels, row)
		id++
		y++
		x := 0
		for _, ps := range r.panels {
			w := ps.width
			if w == 0 {
				w = defaultWidth
			}
			if x+w > gridWidth {
				x, y = 0, y+panelHeight
			}
			ps.description = withAlerts(ps.description, b.alertsOnPanel(key, ps.title))
			p := newPanel(ps)
			p.ID = id
			id++
			setGrid(p, x, y, w, panelHeight)
			board.Panels = append(board.Panels, p)
			x += w
		}
		y += panelHeight
	}
	// Panel 0 is the text panel; give it the id after the others so ids stay unique.
	if description != "" {
		board.Panels[0].ID = id
	}
	return Dashboard{Key: key, Title: title, Board: board}
}

func textPanel(content string) *sdk.Panel {
	p := sdk.NewText("")
	p.Title = ""
	p.IsNew = false
	p.Span = 0
	p.TextPanel.Mode = "markdown"
	p.TextPanel.Content = content
	setGrid(p, 0, 0, gridWidth, 3)
	return p
}

func setGrid(p *sdk.Panel, x, y, w, h int) {
	p.GridPos.X, p.GridPos.Y, p.GridPos.W, p.GridPos.H = &x, &y, &w, &h
}

func newPanel(ps panelSpec) *sdk.Panel {
	var p *sdk.Panel
	switch ps.kind {
	case kindHeatmap:
		p = sdk.NewHeatmap(ps.title)
		p.Renderer = nil
		p.HeatmapPanel.DataFormat = "tsbuckets"
		p.HeatmapPanel.HideZeroBuckets = true
		p.HeatmapPanel.Color.Mode = "scheme"
		p.HeatmapPanel.Color.ColorScheme = "interpolateOranges"
		p.HeatmapPanel.Color.ColorScale = "sqrt"
		p.HeatmapPanel.Color.Exponent = 0.5
		p.HeatmapPanel.Legend.Show = true
		p.HeatmapPanel.Tooltip.Show = true
		p.HeatmapPanel.XAxis.Show = true
		p.HeatmapPanel.YAxis.Format = ps.unit
		p.HeatmapPanel.YAxis.Show = true
		p.HeatmapPanel.YBucketBound = "upper"
	case kindStat:
		p = sdk.NewStat(ps.title)
		p.Renderer = nil
		p.StatPanel.Format = ps.unit
		p.StatPanel.NullPointMode = "connected"
		p.StatPanel.ValueName = "current"
	case kindTable:
		p = sdk.NewTable(ps.title)
		p.Renderer = nil
		p.TablePanel.Transform = "table"
	default:
		p = sdk.NewTimeseries(ps.title)
		p.TimeseriesPanel.FieldConfig.Defaults.Unit = ps.unit
		p.TimeseriesPanel.Options.Legend = sdk.TimeseriesLegendOptions{Calcs: []string{}, DisplayMode: "list", Placement: "bottom"}
		p.TimeseriesPanel.Options.Tooltip = sdk.TimeseriesTooltipOptions{Mode: "multi"}
	}
	p.IsNew = false
	p.Span = 0
	p.Datasource = datasource()
	if ps.description != "" {
		d := ps.description
		p.Description = &d
	}
	for _, t := range ps.targets {
		st := sdk.Target{Expr: t.expr, LegendFormat: t.legend, Datasource: datasource(), Instant: t.instant}
		switch {
		case ps.kind == kindHeatmap:
			st.Format = "heatmap"
		case t.instant:
			st.Format = "table"
		default:
			st.Format = "time_series"
		}
		p.AddTarget(&st)
	}
	return p
}

// templateVars returns the datasource variable followed by the query variables.
func (b *builder) templateVars(vars []variableSpec) []sdk.TemplateVar {
	out := []sdk.TemplateVar{{
		Name:    "datasource",
		Label:   "Data source",
		Type:    "datasource",
		Query:   "prometheus",
		Options: []sdk.Option{},
		Current: sdk.Current{Value: "${DS_PROMETHEUS}", Text: &sdk.StringSliceString{Value: []string{"${DS_PROMETHEUS}"}, Valid: true}},
	}}
	for _, v := range vars {
		out = append(out, sdk.TemplateVar{
			Name:       v.name,
			Label:      v.label,
			Type:       "query",
			Datasource: datasource(),
			Query:      map[string]any{"query": "label_values(" + v.query + ", " + v.valueLabel + ")", "refId": "PrometheusVariableQueryEditor-VariableQuery"},
			Refresh:    sdk.BoolInt{Flag: true, Value: ptr(int64(2))},
			Options:    []sdk.Option{},
			IncludeAll: true,
			AllValue:   ".*",
			Multi:      true,
			Sort:       1,
			Current:    sdk.Current{Value: []string{"$__all"}, Text: &sdk.StringSliceString{Value: []string{"All"}, Valid: true}},
		})
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// alertsOnPanel returns the names of the generated alerts whose signal the panel shows.
func (b *builder) alertsOnPanel(dashboard, title string) []string {
	var out []string
	for _, a := range b.enabledAlerts() {
		if a.Panel == (PanelRef{dashboard, title}) {
			out = append(out, a.FullName())
		}
	}
	return out
}

// withAlerts appends to a panel's description the alerts that watch its signal.
func withAlerts(description string, alerts []string) string {
	if len(alerts) == 0 {
		return description
	}
	if description != "" {
		description += " "
	}
	return description + "Alerts: " + strings.Join(alerts, ", ") + "."
}
