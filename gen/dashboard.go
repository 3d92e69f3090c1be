package gen

import (
	"errors"
	"fmt"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/heatmap"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/text"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// Dashboards are built as typed values of Grafana's own dashboard schema
// (github.com/grafana/grafana-foundation-sdk/go, generated from the schemas Grafana validates
// dashboards with) from small specs: each dashboard's rows of panels and their queries live in
// dashboard_<key>.go, the layout (rows of panels on Grafana's 24-column grid) here. A panel's
// description names the alerts that watch its signal (each alert declares its panel).
//
// grafana-tools/sdk, which built them before, writes fields Grafana's schema no longer has on
// every board and panel (rows, style, slug, isNew, span, error, ...) and has no type for the
// current heatmap and table panels; see CheckDashboard for the schema check.

// Dashboard is one generated Grafana dashboard. Its strings may refer to Params.
type Dashboard struct {
	// Key names the dashboard in the config (dashboards.uids) and in file names.
	Key   string
	Title string
	Board *dashboard.Dashboard
}

// FileName is the dashboard's file name in dashboards/ and its key in the mixin's
// grafanaDashboards.
func (d Dashboard) FileName() string { return "loopwatch-" + d.Key + ".json" }

// PanelTitles returns the titles of the dashboard's panels, rows' nested panels included.
func (d Dashboard) PanelTitles() []string {
	var out []string
	for _, p := range d.Board.Panels {
		switch {
		case p.Panel != nil && p.Panel.Title != nil:
			out = append(out, *p.Panel.Title)
		case p.RowPanel != nil:
			for _, n := range p.RowPanel.Panels {
				if n.Title != nil {
					out = append(out, *n.Title)
				}
			}
		}
	}
	return out
}

// panelKind is the Grafana panel type.
type panelKind string

const (
	kindTimeseries panelKind = "timeseries"
	kindHeatmap    panelKind = "heatmap"
	kindTable      panelKind = "table"
)

// panelSpec describes one panel; the layout places it.
type panelSpec struct {
	title       string
	description string
	kind        panelKind
	unit        string
	// value names a table's value column (instant queries give it as "Value"); tables sort by
	// it, highest first.
	value string
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
	// datasourceVar is how every panel, query and variable names the data source: the
	// dashboard's own datasource variable.
	datasourceVar = "${datasource}"
	// defaultDatasource is the datasource variable's value that Grafana resolves to its default
	// data source, when it is of the variable's type: the dashboards then need no import-time
	// substitution (file provisioning, such as the Grafana sidecar's, does none).
	defaultDatasource = "default"
)

func datasource() common.DataSourceRef {
	return common.DataSourceRef{Type: ptr("prometheus"), Uid: ptr(datasourceVar)}
}

// newDashboard lays out rows of panels with unique ids and non-overlapping grid positions.
func (b *builder) newDashboard(key, title, description string, vars []variableSpec, rows []rowSpec) Dashboard {
	board, err := dashboard.NewDashboardBuilder(title).
		Uid(b.p.S(key+"DashboardUID", b.cfg.Dashboards.UIDs[key])).
		// Dashboards carry no comment: their description says they are generated.
		Description(Header+" Edits made here are lost when loopwatch gen writes it again: change its config instead.").
		Tags(append([]string{}, b.cfg.Dashboards.Tags...)).
		Timezone("utc").
		Editable().
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		Time("now-3h", "now").
		Timepicker(dashboard.NewTimePickerBuilder().RefreshIntervals([]string{"30s", "1m", "5m", "15m"})).
		Refresh(b.cfg.Dashboards.Refresh).
		Version(1).
		Build()
	b.fail(err, "dashboard %q", key)
	board.Templating.List = b.templateVars(vars)

	y := uint32(0)
	if description != "" {
		board.Panels = append(board.Panels, dashboard.PanelOrRowPanel{Panel: b.textPanel(description)})
		y = 3
	}
	var id uint32 = 1
	for _, r := range rows {
		board.Panels = append(board.Panels, dashboard.PanelOrRowPanel{RowPanel: &dashboard.RowPanel{
			Type: "row", Title: ptr(r.title), Id: id, Panels: []dashboard.Panel{},
			GridPos: &dashboard.GridPos{X: 0, Y: y, W: gridWidth, H: 1},
		}})
		id++
		y++
		x := uint32(0)
		for _, ps := range r.panels {
			w := uint32(ps.width)
			if w == 0 {
				w = defaultWidth
			}
			if x+w > gridWidth {
				x, y = 0, y+panelHeight
			}
			ps.description = withAlerts(ps.description, b.alertsOnPanel(key, ps.title))
			p := b.newPanel(ps)
			p.Id = ptr(id)
			id++
			p.GridPos = &dashboard.GridPos{X: x, Y: y, W: w, H: panelHeight}
			board.Panels = append(board.Panels, dashboard.PanelOrRowPanel{Panel: p})
			x += w
		}
		y += panelHeight
	}
	// The text panel comes first; give it the id after the others so ids stay unique.
	if description != "" {
		board.Panels[0].Panel.Id = ptr(id)
	}
	return Dashboard{Key: key, Title: title, Board: &board}
}

// fail records an error of the foundation SDK's builders, which validate what they build
// against Grafana's schema: Build reports it.
func (b *builder) fail(err error, format string, args ...any) {
	if err != nil {
		b.errs = append(b.errs, fmt.Errorf(format+": %w", append(args, err)...))
	}
}

// panel builds a panel, its error recorded.
func (b *builder) panel(title string, pb cog.Builder[dashboard.Panel]) *dashboard.Panel {
	p, err := pb.Build()
	b.fail(err, "panel %q", title)
	return &p
}

func (b *builder) textPanel(content string) *dashboard.Panel {
	p := b.panel("", text.NewPanelBuilder().Mode(text.TextModeMarkdown).Content(content))
	p.Title = ptr("")
	p.GridPos = &dashboard.GridPos{X: 0, Y: 0, W: gridWidth, H: 3}
	return p
}

// newPanel builds a panel of the spec's kind in its current form: options and fieldConfig of the
// panel plugin (time series, heatmap, table), transformations for tables.
func (b *builder) newPanel(ps panelSpec) *dashboard.Panel {
	var p *dashboard.Panel
	switch ps.kind {
	case kindHeatmap:
		// Prometheus histogram buckets, already bucketed (calculate: false): each row is the
		// bucket up to its upper bound (le), and empty buckets are not drawn.
		p = b.panel(ps.title, heatmap.NewPanelBuilder().
			Calculate(false).
			RowsFrame(heatmap.NewRowsHeatmapOptionsBuilder().Layout(common.HeatmapCellLayoutLe)).
			Color(heatmap.NewHeatmapColorOptionsBuilder().
				Mode(heatmap.HeatmapColorModeScheme).Scheme("Oranges").Fill("dark-orange").
				Scale(heatmap.HeatmapColorScaleExponential).Exponent(0.5).Steps(64)).
			FilterValues(heatmap.NewFilterValueRangeBuilder().Le(1e-9)).
			YAxis(heatmap.NewYAxisConfigBuilder().Unit(ps.unit).AxisPlacement(common.AxisPlacementLeft)).
			ShowValue(common.VisibilityModeNever).
			ShowLegend().
			Tooltip(heatmap.NewHeatmapTooltipBuilder().Mode(common.TooltipDisplayModeSingle).YHistogram(true).ShowColorScale(true)))
	case kindTable:
		if ps.value == "" {
			b.fail(errors.New("a table names its value column"), "panel %q", ps.title)
		}
		// An instant query's frame has a Time column (the query's time) and the value as
		// "Value": drop the first, name the second, and sort by it.
		p = b.panel(ps.title, table.NewPanelBuilder().
			ShowHeader(true).
			CellHeight(common.TableCellHeightSm).
			Footer(common.NewTableFooterOptionsBuilder().Show(false).Reducer([]string{}).CountRows(false)).
			SortBy([]cog.Builder[common.TableSortByFieldState]{common.NewTableSortByFieldStateBuilder().DisplayName(ps.value).Desc(true)}).
			WithTransformation(dashboard.DataTransformerConfig{Id: "organize", Options: map[string]any{
				"excludeByName": map[string]any{"Time": true},
				"renameByName":  map[string]any{"Value": ps.value},
			}}))
	default:
		p = b.panel(ps.title, timeseries.NewPanelBuilder().
			Legend(common.NewVizLegendOptionsBuilder().ShowLegend(true).DisplayMode(common.LegendDisplayModeList).Placement(common.LegendPlacementBottom).Calcs([]string{})).
			Tooltip(common.NewVizTooltipOptionsBuilder().Mode(common.TooltipDisplayModeMulti).Sort(common.SortOrderDescending)))
	}
	if ps.unit != "" {
		p.FieldConfig.Defaults.Unit = ptr(ps.unit)
	}
	p.Title = ptr(ps.title)
	p.Datasource = ptr(datasource())
	if ps.description != "" {
		p.Description = ptr(ps.description)
	}
	for i, t := range ps.targets {
		q := prometheus.NewDataqueryBuilder().Expr(t.expr).Datasource(datasource()).RefId(refID(i))
		if t.legend != "" {
			q.LegendFormat(t.legend)
		}
		switch {
		case ps.kind == kindHeatmap:
			q.Format(prometheus.PromQueryFormatHeatmap)
		case t.instant:
			q.Format(prometheus.PromQueryFormatTable).Instant()
		default:
			q.Format(prometheus.PromQueryFormatTimeSeries).Range()
		}
		dq, err := q.Build()
		b.fail(err, "panel %q: query %s", ps.title, refID(i))
		p.Targets = append(p.Targets, dq)
	}
	return p
}

// refID names a panel's i-th query as Grafana does: A, B, C, ...
func refID(i int) string { return string(rune('A' + i)) }

// templateVars returns the datasource variable followed by the query variables.
func (b *builder) templateVars(vars []variableSpec) []dashboard.VariableModel {
	dsVar, err := dashboard.NewDatasourceVariableBuilder("datasource").
		Label("Data source").
		Type("prometheus").
		Current(dashboard.VariableOption{
			Text:  dashboard.StringOrArrayOfString{String: ptr(defaultDatasource)},
			Value: dashboard.StringOrArrayOfString{String: ptr(defaultDatasource)},
		}).
		Build()
	b.fail(err, "datasource variable")
	dsVar.Refresh = ptr(dashboard.VariableRefreshOnDashboardLoad)
	dsVar.Options = []dashboard.VariableOption{}
	out := []dashboard.VariableModel{withoutIntervalFields(dsVar)}
	for _, v := range vars {
		qv, err := dashboard.NewQueryVariableBuilder(v.name).
			Label(v.label).
			Datasource(datasource()).
			Query(dashboard.StringOrMap{Map: map[string]any{
				"query": "label_values(" + v.query + ", " + v.valueLabel + ")",
				"refId": "PrometheusVariableQueryEditor-VariableQuery",
			}}).
			Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
			Options([]dashboard.VariableOption{}).
			IncludeAll(true).
			AllValue(".*").
			Multi(true).
			Sort(dashboard.VariableSortAlphabeticalAsc).
			Current(dashboard.VariableOption{
				Text:  dashboard.StringOrArrayOfString{ArrayOfString: []string{"All"}},
				Value: dashboard.StringOrArrayOfString{ArrayOfString: []string{"$__all"}},
			}).
			Build()
		b.fail(err, "variable %q", v.name)
		out = append(out, withoutIntervalFields(qv))
	}
	return out
}

// withoutIntervalFields drops the interval variables' fields (auto, auto_min, auto_count) the
// foundation SDK's builders set on every variable.
func withoutIntervalFields(v dashboard.VariableModel) dashboard.VariableModel {
	v.Auto, v.AutoMin, v.AutoCount = nil, nil, nil
	return v
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
