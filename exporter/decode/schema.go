package decode

// eventRows is the audit event schema, declared once: every member of an audit.k8s.io/v1 Event
// and of the objects nested in it, in the order of the API server's Go structs (the order it
// writes them in, which the fast path expects), with what the decoder keeps of each. The fast path,
// the general path, the key prediction and the last-value caches are all derived from it (see
// member.go); TestSchemaFollowsTheAPITypes checks it against the API server's types.
//
// Keeping another field is one row (and the field in Event): a string member is
// {"name", str(&into.Field)}, a map entry {"key", ...} in the map's rows (a key ending in '*'
// matches every key with that prefix, e.g. "mutation.webhook.admission.k8s.io/round_*"), a query
// parameter of the request URI {"param", str(&into.Field)} in requestURI's rows.
var eventRows = []field{
	{"kind", skip}, // TypeMeta: the log backend writes it, the webhook does not
	{"apiVersion", skip},
	{"level", skip},
	{"auditID", hashed(&into.AuditIDHash, &into.HasAuditID)},
	{"stage", str(&into.Stage)},
	{"requestURI", uriQuery([]field{
		{"fieldManager", str(&into.FieldManager)},
		// WatchList: a watch that first sends the current state, as an informer's initial list
		// and every relist of a client-go ≥ 1.35 client.
		{"sendInitialEvents", str(&into.SendInitialEvents)},
	})},
	{"verb", str(&into.Verb)},
	{"user", object([]field{
		{"username", str(&into.Username)},
		{"uid", skip},
		{"groups", stringList},
		{"extra", stringListMap([]field{
			{PodNameExtraKey, firstOf(&into.Pod)},
		})},
	})},
	{"impersonatedUser", pointer([]field{
		{"username", str(&into.ImpersonatedUsername)},
		{"uid", skip},
		{"groups", stringList},
		{"extra", stringListMap(nil)},
	})},
	{"authenticationMetadata", skip},
	{"sourceIPs", stringList},
	{"userAgent", str(&into.UserAgent)},
	{"objectRef", pointer([]field{
		{"resource", str(&into.Resource)},
		{"namespace", str(&into.Namespace)},
		{"name", str(&into.Name)},
		{"uid", skip},
		{"apiGroup", str(&into.APIGroup)},
		{"apiVersion", skip},
		{"resourceVersion", skip},
		{"subresource", str(&into.Subresource)},
	})},
	{"responseStatus", pointer([]field{
		{"kind", skip},
		{"apiVersion", skip},
		{"metadata", skip},
		{"status", skip},
		{"message", skip},
		{"reason", skip},
		{"details", skip},
		{"code", integer(&into.Code)},
	})},
	{"requestObject", skip},
	{"responseObject", skip},
	{"requestReceivedTimestamp", timestamp(&into.RequestReceived)},
	{"stageTimestamp", timestamp(&into.StageTimestamp)},
	{"annotations", stringMap([]field{
		// The mutating admission webhooks that ran on a write, one annotation each; kept: the last
		// that changed the object.
		{MutationAnnotationPrefix + "round_*", strContaining(&into.MutatingWebhook, `"mutated":true`)},
	})},
	// Members of older versions (audit.k8s.io/v1beta1), last so that v1 events never compare
	// their keys: before requestReceivedTimestamp existed, an event's only time.
	{"timestamp", legacyTime(&into.Timestamp)},
}

// eventSchema is eventRows compiled: what NewDecoder's decoders read.
var eventSchema = compile(eventRows)
