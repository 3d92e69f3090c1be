package decode

import (
	"bytes"
	"time"
)

// GKE writes Kubernetes audit events as Cloud Audit Logs: a Cloud Logging LogEntry whose
// protoPayload is a google.cloud.audit.AuditLog. That is another schema than audit.k8s.io's, so
// it is declared here as rows of its own, read by the same fast and general paths, and mapped
// onto the same Event:
//
//   - protoPayload.methodName "io.k8s.<group reversed>.<version>.<resource>[.<subresource>].<verb>"
//     (core is "io.k8s.core", a one-label group g is "io.k8s.g", a DNS group is reversed:
//     "coordination.k8s.io" → "io.k8s.coordination") gives verb, resource and subresource;
//   - protoPayload.resourceName "<group|core>/<version>[/namespaces/<ns>]/<resource>[/<name>[/<sub>]]"
//     gives group, namespace and name; both must agree, or the entry is not mapped;
//   - protoPayload.authenticationInfo.principalEmail is the username,
//     requestMetadata.callerSuppliedUserAgent the user agent;
//   - protoPayload.status.code is a google.rpc code, mapped to its HTTP status as google/rpc/code.proto
//     documents it (ABORTED and ALREADY_EXISTS both become 409; the verb then tells a conflict from
//     an AlreadyExists, as for native events); no status, or code 0, is 200;
//   - insertId is the audit ID; timestamp is the event's time (GKE writes one entry per request,
//     at ResponseComplete, so both timestamps take it);
//   - labels are the audit annotations: the mutating webhook that changed the object is kept as
//     in native events;
//   - user.extra (the pod of a bound token), groups, impersonation, requestURI (fieldManager) and
//     the exact HTTP code are not in the entry: those fields stay empty.
//
// Keys are declared in the order Cloud Logging writes them (sorted), which the fast path expects.

// Members of an entry that the rows keep outside Event.
type logEntryState struct {
	method, resource                 []byte
	hasMethod, hasResource           bool
	auditLog, k8sService, k8sCluster bool
	hasTime                          bool
	time                             time.Time
}

func (st *logEntryState) reset() {
	st.method, st.resource = st.method[:0], st.resource[:0]
	st.hasMethod, st.hasResource, st.auditLog, st.k8sService, st.k8sCluster, st.hasTime = false, false, false, false, false, false
	st.time = time.Time{}
}

// Values an entry must carry to be a Kubernetes audit entry.
const (
	auditLogType    = "type.googleapis.com/google.cloud.audit.AuditLog"
	k8sServiceName  = "k8s.io"
	k8sResourceType = "k8s_cluster"
)

// logEntryRows is the LogEntry schema: the members of google.logging.v2.LogEntry and of the
// AuditLog payload, sorted as Cloud Logging writes them, with what is kept of each.
var logEntryRows = []field{
	{"insertId", hashed(&into.AuditIDHash, &into.HasAuditID)},
	{"labels", stringMap([]field{ // the audit annotations, kept as in native events
		{MutationAnnotationPrefix + "round_*", strContaining(&into.MutatingWebhook, `"mutated":true`)},
	})},
	{"logName", skip},
	{"operation", skip},
	{"protoPayload", pointer([]field{
		{"@type", parsed(func(d *Decoder, _ *Event, b []byte) { d.entry.auditLog = string(b) == auditLogType })},
		{"authenticationInfo", pointer([]field{
			{"authoritySelector", skip},
			{"principalEmail", str(&into.Username)},
			{"principalSubject", skip},
			{"serviceAccountDelegationInfo", skip},
			{"serviceAccountKeyName", skip},
			{"thirdPartyPrincipal", skip},
		})},
		{"authorizationInfo", skip},
		{"metadata", skip},
		{"methodName", parsed(func(d *Decoder, _ *Event, b []byte) {
			d.entry.method, d.entry.hasMethod = append(d.entry.method[:0], b...), b != nil
		})},
		{"numResponseItems", skip},
		{"policyViolationInfo", skip},
		{"request", skip},
		{"requestMetadata", pointer([]field{
			{"callerIp", skip},
			{"callerNetwork", skip},
			{"callerSuppliedUserAgent", str(&into.UserAgent)},
			{"destinationAttributes", skip},
			{"requestAttributes", skip},
		})},
		{"resourceLocation", skip},
		{"resourceName", parsed(func(d *Decoder, _ *Event, b []byte) {
			d.entry.resource, d.entry.hasResource = append(d.entry.resource[:0], b...), b != nil
		})},
		{"resourceOriginalState", skip},
		{"response", skip},
		{"serviceData", skip},
		{"serviceName", parsed(func(d *Decoder, _ *Event, b []byte) { d.entry.k8sService = string(b) == k8sServiceName })},
		{"status", pointer([]field{
			{"code", integer(&into.Code)},
			{"details", skip},
			{"message", skip},
		})},
	})},
	{"receiveTimestamp", skip},
	{"resource", pointer([]field{
		{"labels", skip},
		{"type", parsed(func(d *Decoder, _ *Event, b []byte) { d.entry.k8sCluster = string(b) == k8sResourceType })},
	})},
	{"severity", skip},
	{"sourceLocation", skip},
	{"spanId", skip},
	{"split", skip},
	{"timestamp", parsed(func(d *Decoder, _ *Event, b []byte) {
		d.entry.time, d.entry.hasTime = parseEntryTime(b)
	})},
	{"trace", skip},
	{"traceSampled", skip},
}

// logEntrySchema is logEntryRows compiled.
var logEntrySchema = compile(logEntryRows)

// Cache slots (Decoder.last) of the parts taken from methodName and resourceName, after the
// schema's own.
var (
	slotVerb        = logEntrySchema.slots
	slotGroup       = slotVerb + 1
	slotResource    = slotVerb + 2
	slotSubresource = slotVerb + 3
	slotNamespace   = slotVerb + 4
	slotName        = slotVerb + 5
)

func init() {
	if slotName >= maxSlots {
		panic("decode: the log entry schema uses too many cache slots")
	}
}

// EntryError says why a well-formed LogEntry is not counted as an audit event. The errors are
// values, so refusing a flood of them allocates nothing.
type EntryError struct {
	msg string
	// NotAudit is true when the entry is another log's (another payload type, service or
	// monitored resource): counted apart from entries that are audit entries but cannot be mapped.
	NotAudit bool
}

// Error implements error.
func (e *EntryError) Error() string { return e.msg }

// Reasons a LogEntry is not mapped.
var (
	ErrEntryNotAudit  = &EntryError{msg: "not a Kubernetes audit log entry (payload type, serviceName or resource type)", NotAudit: true}
	ErrEntryMethod    = &EntryError{msg: "methodName does not name a Kubernetes API method of the resource"}
	ErrEntryResource  = &EntryError{msg: "resourceName does not name a Kubernetes resource"}
	ErrEntryStatus    = &EntryError{msg: "status code is not a google.rpc code"}
	ErrEntryTimestamp = &EntryError{msg: "timestamp missing or not RFC 3339"}
)

// LogEntryDecoder decodes GKE's Kubernetes audit log entries (Cloud Logging LogEntry JSON, as a
// log sink writes them to Pub/Sub or Cloud Storage, or `gcloud logging read --format=json`
// prints them) into Events. Like Decoder it is not safe for concurrent use and allocates nothing
// at steady state.
type LogEntryDecoder struct {
	d *Decoder
}

// NewLogEntryDecoder returns a decoder with its own interner of internerSize slots
// (DefaultInternerSize when internerSize ≤ 0) and the limits' bound on kept strings.
func NewLogEntryDecoder(internerSize int, limits Limits) *LogEntryDecoder {
	d := newDecoder(internerSize, logEntrySchema)
	d.SetLimits(limits)
	return &LogEntryDecoder{d: d}
}

// Decode decodes one LogEntry object into ev. A *SyntaxError means the JSON is malformed; an
// *EntryError that it is well formed but not a Kubernetes audit entry, or one that cannot be
// mapped without guessing (ev must not be used then).
func (ld *LogEntryDecoder) Decode(data []byte, ev *Event) error {
	d := ld.d
	d.s.reset(data)
	*ev = Event{}
	d.entry.reset()
	if err := d.decodeEvent(ev); err != nil {
		return err
	}
	if err := d.s.end(); err != nil {
		return err
	}
	return d.mapLogEntry(ev)
}

// mapLogEntry completes ev from what the parse functions kept.
func (d *Decoder) mapLogEntry(ev *Event) error {
	st := &d.entry
	if !st.auditLog || !st.k8sService || !st.k8sCluster {
		return ErrEntryNotAudit
	}
	if !st.hasTime {
		return ErrEntryTimestamp
	}
	code, ok := httpStatusOf(ev.Code)
	if !ok {
		return ErrEntryStatus
	}
	if err := d.mapMethod(ev); err != nil {
		return err
	}
	ev.Code = code
	ev.Stage = StageResponseComplete
	ev.RequestReceived, ev.StageTimestamp = st.time, st.time
	return nil
}

// mapMethod sets verb, group, resource, subresource, namespace and name from methodName and
// resourceName, which must agree.
func (d *Decoder) mapMethod(ev *Event) error {
	st := &d.entry
	if !st.hasMethod {
		return ErrEntryMethod
	}
	if !st.hasResource {
		return ErrEntryResource
	}
	group, rest, ok1 := bytes.Cut(st.resource, []byte{'/'})
	version, rest, ok2 := bytes.Cut(rest, []byte{'/'})
	if !ok1 || !ok2 || !isSegment(group) || !isSegment(version) {
		return ErrEntryResource
	}
	// methodName: <group reversed>.<version>.<resource>[.<subresource>].<verb>
	tail, ok := trimMethodGroup(st.method, group)
	if !ok || !bytes.HasPrefix(tail, version) || len(tail) <= len(version) || tail[len(version)] != '.' {
		return ErrEntryMethod
	}
	tail = tail[len(version)+1:]
	resource, tail, _ := bytes.Cut(tail, []byte{'.'})
	sub, verb, hasSub := bytes.Cut(tail, []byte{'.'})
	if !hasSub {
		sub, verb = nil, sub
	}
	if !isSegment(resource) || !isVerb(verb) || hasSub && !isSegment(sub) {
		return ErrEntryMethod
	}
	// resourceName after group/version: [namespaces/<ns>/]<resource>[/<name>[/<sub>]]; a
	// Namespace is namespaces/<name>[/<sub>] and is its own namespace, as in native events.
	var segs [6][]byte
	n := 0
	for len(rest) > 0 || n == 0 {
		if n == len(segs) {
			return ErrEntryResource
		}
		segs[n], rest, _ = bytes.Cut(rest, []byte{'/'})
		if !isSegment(segs[n]) {
			return ErrEntryResource
		}
		n++
	}
	var ns, name, sub2 []byte
	at := func(i int) []byte {
		if i < n {
			return segs[i]
		}
		return nil
	}
	switch {
	case string(resource) == "namespaces":
		if string(segs[0]) != "namespaces" || n > 3 {
			return ErrEntryResource
		}
		name, sub2 = at(1), at(2)
		ns = name
	case string(segs[0]) == "namespaces" && n >= 3:
		if string(segs[2]) != string(resource) || n > 5 {
			return ErrEntryResource
		}
		ns, name, sub2 = segs[1], at(3), at(4)
	case string(segs[0]) == string(resource):
		if n > 3 {
			return ErrEntryResource
		}
		name, sub2 = at(1), at(2)
	default:
		return ErrEntryResource
	}
	if string(sub) != string(sub2) {
		return ErrEntryResource
	}
	ev.Verb = d.internAt(slotVerb, verb)
	if string(group) == "core" {
		ev.APIGroup = ""
	} else {
		ev.APIGroup = d.internAt(slotGroup, group)
	}
	ev.Resource = d.internAt(slotResource, resource)
	ev.Subresource = d.internAt(slotSubresource, sub)
	ev.Namespace = d.internAt(slotNamespace, ns)
	ev.Name = d.internAt(slotName, name)
	return nil
}

// trimMethodGroup removes the method name's group part and its dot: "io.k8s.core." for core,
// "io.k8s.<g>." for a one-label group, the labels reversed for a DNS group.
func trimMethodGroup(method, group []byte) ([]byte, bool) {
	if bytes.IndexByte(group, '.') < 0 {
		m, ok := bytes.CutPrefix(method, []byte("io.k8s."))
		if !ok || !bytes.HasPrefix(m, group) || len(m) <= len(group) || m[len(group)] != '.' {
			return nil, false
		}
		return m[len(group)+1:], true
	}
	for end := len(group); end > 0; {
		start := bytes.LastIndexByte(group[:end], '.') + 1
		label := group[start:end]
		if len(label) == 0 || !bytes.HasPrefix(method, label) || len(method) <= len(label) || method[len(label)] != '.' {
			return nil, false
		}
		method = method[len(label)+1:]
		end = start - 1
	}
	return method, true
}

// isSegment reports whether b can be one part of a resource path: not empty, and without the
// separators and characters no Kubernetes name holds.
func isSegment(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c <= ' ' || c == '/' || c == '"' || c == '\\' || c >= 0x7f {
			return false
		}
	}
	return true
}

// isVerb reports whether b is a plausible Kubernetes verb: lower-case letters.
func isVerb(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

// rpcHTTPStatus maps google.rpc.Code values to the HTTP status google/rpc/code.proto names.
var rpcHTTPStatus = [...]int32{
	0:  200, // OK
	1:  499, // CANCELLED
	2:  500, // UNKNOWN
	3:  400, // INVALID_ARGUMENT
	4:  504, // DEADLINE_EXCEEDED
	5:  404, // NOT_FOUND
	6:  409, // ALREADY_EXISTS
	7:  403, // PERMISSION_DENIED
	8:  429, // RESOURCE_EXHAUSTED
	9:  400, // FAILED_PRECONDITION
	10: 409, // ABORTED
	11: 400, // OUT_OF_RANGE
	12: 501, // UNIMPLEMENTED
	13: 500, // INTERNAL
	14: 503, // UNAVAILABLE
	15: 500, // DATA_LOSS
	16: 401, // UNAUTHENTICATED
}

// httpStatusOf maps a google.rpc code to an HTTP status; ok is false for a code rpc does not define.
func httpStatusOf(code int32) (int32, bool) {
	if code < 0 || int(code) >= len(rpcHTTPStatus) {
		return 0, false
	}
	return rpcHTTPStatus[code], true
}

// parseEntryTime parses a LogEntry timestamp: RFC 3339 as protobuf's JSON mapping writes it
// ("Z", 0 to 9 fractional digits) without allocating, anything else RFC 3339 through time.Parse.
func parseEntryTime(b []byte) (time.Time, bool) {
	if b == nil {
		return time.Time{}, false
	}
	if t, ok := parseRFC3339Z(b); ok {
		return t, true
	}
	t, err := time.Parse(time.RFC3339Nano, string(b))
	return t.UTC(), err == nil
}

// parseRFC3339Z parses "2006-01-02T15:04:05[.fraction]Z" with up to nine fractional digits.
func parseRFC3339Z(b []byte) (time.Time, bool) {
	if len(b) < 20 || b[len(b)-1] != 'Z' || b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' {
		return time.Time{}, false
	}
	num := func(from, to int) (int, bool) {
		n := 0
		for _, c := range b[from:to] {
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, true
	}
	year, ok1 := num(0, 4)
	month, ok2 := num(5, 7)
	day, ok3 := num(8, 10)
	hour, ok4 := num(11, 13)
	minute, ok5 := num(14, 16)
	sec, ok6 := num(17, 19)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || month < 1 || month > 12 || day < 1 ||
		day > daysIn(month, year) || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	nanos := 0
	if frac := b[19 : len(b)-1]; len(frac) > 0 {
		if frac[0] != '.' || len(frac) < 2 || len(frac) > 10 {
			return time.Time{}, false
		}
		n, ok := num(20, len(b)-1)
		if !ok {
			return time.Time{}, false
		}
		for range 10 - len(frac) {
			n *= 10
		}
		nanos = n
	}
	secs := daysFromCivil(year, month, day)*86400 + int64(hour*3600+minute*60+sec)
	return time.Unix(secs, int64(nanos)).UTC(), true
}
