package instrument

// Verb is the kind of API call a reconciler made, in lower case.
type Verb string

// The verbs the instrumented client distinguishes. Writes to the status
// subresource have their own verbs because a status write that repeats on
// every reconcile is the commonest hot loop.
const (
	VerbGet              Verb = "get"
	VerbList             Verb = "list"
	VerbCreate           Verb = "create"
	VerbUpdate           Verb = "update"
	VerbPatch            Verb = "patch"
	VerbDelete           Verb = "delete"
	VerbDeleteCollection Verb = "deletecollection"
	VerbStatusUpdate     Verb = "status_update"
	VerbStatusPatch      Verb = "status_patch"
)

// Access says whether a call reads or writes.
type Access string

// The two kinds of access.
const (
	AccessRead  Access = "read"
	AccessWrite Access = "write"
)

// AllVerbs lists every verb, reads first.
func AllVerbs() []Verb {
	return []Verb{VerbGet, VerbList, VerbCreate, VerbUpdate, VerbPatch, VerbDelete, VerbDeleteCollection, VerbStatusUpdate, VerbStatusPatch}
}

// Access tells whether the verb reads or writes.
func (v Verb) Access() Access {
	if v == VerbGet || v == VerbList {
		return AccessRead
	}
	return AccessWrite
}
