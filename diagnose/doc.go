// Package diagnose walks the controller-slowness playbook over Prometheus data: for every
// controller (or one), is its queue growing, are reconciles slow, failing or stuck, how many API
// calls does a reconcile make, is it hot-looping, does someone else write the same objects, do
// replicas race, is there a leader, and are the metrics it needs there at all.
//
// Each step of the playbook is one of loopwatch's alerts (package gen), evaluated with the
// alert's own expression and thresholds over a window: diagnose and the alerts cannot disagree
// on what "too slow" means. Where Prometheus lacks loopwatch's recording rules their
// expressions are inlined, so the same checks run on the raw metrics. The failures found are
// ranked by the strength of their evidence, and a failure another one explains (a growing queue
// behind a stuck worker, slow reconciles behind N+1 API calls, a high PATCH rate behind a write
// fight) is listed as that one's symptom. The verdict comes from the checks that ran: a
// controller whose reconcile counter is there and recent and whose checks found nothing is
// "healthy", the checks that could not run listed with why (an old controller-runtime's queue
// series without a controller label, say); "insufficient-data" is left for a counter that stopped
// or is too new.
//
// The JSON form of Report is documented in docs/diagnose.md.
package diagnose
