package gen

import "time"

// The APF group's recording rules: the API server's API Priority and Fairness metrics per
// FlowSchema, over API server instances. They record every FlowSchema, not only loopwatch's: the
// default ones (service-accounts, global-default, ...) are the context a controller's share of its
// priority level is read against, and their number is the cluster's FlowSchema objects, a few
// dozen at most. The alerts then select loopwatch's own schemas (ownFlowSchema).

// levelFlowSchema: the requests one FlowSchema classified, in one cluster. Each API server
// instance runs its own APF with the same configuration, so instances add up.
var levelFlowSchema = level{"cluster_priority_level_flow_schema", []string{clusterRef, "priority_level", "flow_schema"}}

// apiserverFlowSchema returns the labels of an API server target's series about one FlowSchema.
func apiserverFlowSchema(c *caseEnv, flowSchema, priorityLevel string) Labels {
	return c.Target("apiserver").With("flow_schema", flowSchema, "priority_level", priorityLevel)
}

// The fixtures' FlowSchemas: a controller's own and the default one other ServiceAccounts share.
const (
	testOwnFlowSchema    = flowSchemaPrefix + "backup-operator"
	testSharedFlowSchema = "service-accounts"
)

// otherAPIServer is a second API server instance of the same cluster.
func otherAPIServer(l Labels) Labels { return l.With("instance", "10.0.0.11:6443") }

var recAPFDispatched = &Recording{
	Name: levelFlowSchema.record("apiserver_flowcontrol_dispatched_requests_total", "rate5m"),
	Expr: func(e *exprEnv) string {
		return sumBy(levelFlowSchema, rate(sel("apiserver_flowcontrol_dispatched_requests_total", e.Selector("apiserver")), "5m"))
	},
	Cases: func(c *caseEnv) []ExprCase {
		own := apiserverFlowSchema(c, testOwnFlowSchema, "workload-low")
		shared := apiserverFlowSchema(c, testSharedFlowSchema, "workload-low")
		return []ExprCase{{
			Name: "records each FlowSchema's dispatch rate summed over the API server instances",
			At:   10 * time.Minute,
			Series: []*Series{
				Counter("apiserver_flowcontrol_dispatched_requests_total", own, 3),
				Counter("apiserver_flowcontrol_dispatched_requests_total", otherAPIServer(own), 1.5),
				Counter("apiserver_flowcontrol_dispatched_requests_total", shared, 20),
			},
			Want: []Sample{
				{c.AtLevel(levelFlowSchema, own), 4.5},
				{c.AtLevel(levelFlowSchema, shared), 20},
			},
		}}
	},
}

var recAPFRejected = &Recording{
	Name: levelFlowSchema.with("reason").record("apiserver_flowcontrol_rejected_requests_total", "rate5m"),
	Expr: func(e *exprEnv) string {
		return sumBy(levelFlowSchema.with("reason"), rate(sel("apiserver_flowcontrol_rejected_requests_total", e.Selector("apiserver")), "5m"))
	},
	Cases: func(c *caseEnv) []ExprCase {
		own := apiserverFlowSchema(c, testOwnFlowSchema, "workload-low")
		return []ExprCase{{
			Name: "records each FlowSchema's rejections by reason over the API server instances",
			At:   10 * time.Minute,
			Series: []*Series{
				Counter("apiserver_flowcontrol_rejected_requests_total", own.With("reason", "queue-full"), 0.5),
				Counter("apiserver_flowcontrol_rejected_requests_total", otherAPIServer(own).With("reason", "queue-full"), 0.25),
				Counter("apiserver_flowcontrol_rejected_requests_total", own.With("reason", "time-out"), 0.1),
			},
			Want: []Sample{
				{c.AtLevel(levelFlowSchema.with("reason"), own.With("reason", "queue-full")), 0.75},
				{c.AtLevel(levelFlowSchema.with("reason"), own.With("reason", "time-out")), 0.1},
			},
		}}
	},
}

// recAPFWaitBuckets records the queue-wait histogram's bucket rates per FlowSchema, over API
// server instances and over `execute` (the histogram observes rejected requests too, with
// execute="false"): the exact share of a FlowSchema's requests that waited longer than a bucket
// bound, and dashboard quantiles, are read from it.
var recAPFWaitBuckets = &Recording{
	Name: levelFlowSchema.with("le").record("apiserver_flowcontrol_request_wait_duration_seconds_bucket", "rate5m"),
	Expr: func(e *exprEnv) string {
		return sumBy(levelFlowSchema.with("le"), rate(sel("apiserver_flowcontrol_request_wait_duration_seconds_bucket", e.Selector("apiserver")), "5m"))
	},
	Cases: func(c *caseEnv) []ExprCase {
		own := apiserverFlowSchema(c, testOwnFlowSchema, "workload-low")
		// On each of two API servers, 4 dispatched requests a second, one of which waits between
		// 0.5s and 1s; on one of them a rejected request a second, which waits 0s.
		dispatched := func(b float64) float64 {
			if b >= 1 {
				return 4
			}
			return 3
		}
		var series []*Series
		var want []Sample
		add := func(le string, perSecond func(Labels) float64) {
			total := 0.0
			for _, l := range []Labels{own.With("execute", "true"), otherAPIServer(own).With("execute", "true"), own.With("execute", "false")} {
				series = append(series, Counter("apiserver_flowcontrol_request_wait_duration_seconds_bucket", l.With("le", le), perSecond(l)))
				total += perSecond(l)
			}
			want = append(want, Sample{c.AtLevel(levelFlowSchema.with("le"), own.With("le", le)), total})
		}
		for _, b := range apfWaitBuckets {
			add(formatValue(b), func(l Labels) float64 {
				if l["execute"] == "false" {
					return 1
				}
				return dispatched(b)
			})
		}
		add("+Inf", func(l Labels) float64 {
			if l["execute"] == "false" {
				return 1
			}
			return 4
		})
		return []ExprCase{{
			Name:   "records bucket rates per FlowSchema over API server instances and execute",
			At:     10 * time.Minute,
			Series: series,
			Want:   want,
		}}
	},
}
