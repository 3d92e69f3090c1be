// Package detect proves loopwatch's rules on controllers that loopwatch did not write: the
// example scheduler and conditions controllers (and, for the hot loop, the reference operator)
// run as real processes against a real kube-apiserver whose audit webhook feeds the loopwatch
// exporter, and a real Prometheus evaluates the generated rules. Healthy controllers must stay
// silent; each injected fault must fire its alert and no other. See detection_test.go.
package detect
