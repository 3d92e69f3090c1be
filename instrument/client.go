package instrument

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// maxPatchBody bounds the patch text kept in a Call.
const maxPatchBody = 512

// NewClient wraps c so that every call is counted in
// loopwatch_controller_api_requests_total under the given controller name and,
// when the context carries a Tally (see [WithTally] and [Reconciler]),
// recorded there. m may be nil.
//
// Wrap the client per controller: the label is what lets the rules tell which
// controller of a process makes N+1 calls or hot-loops.
func NewClient(controller string, c client.Client, m *Metrics) client.Client {
	m.initController(controller)
	return &countingClient{Client: c, controller: controller, metrics: m}
}

// NewReader wraps a reader (for example the manager's uncached APIReader) the
// same way as [NewClient].
func NewReader(controller string, r client.Reader, scheme *runtime.Scheme, m *Metrics) client.Reader {
	m.initController(controller)
	return &countingReader{reader: r, rec: recorder{controller: controller, metrics: m, scheme: scheme}}
}

type recorder struct {
	controller string
	metrics    *Metrics
	scheme     *runtime.Scheme
}

func (r recorder) record(ctx context.Context, verb Verb, obj runtime.Object, patch client.Patch) {
	r.metrics.countCall(r.controller, verb)
	if t := TallyFrom(ctx); t != nil {
		r.tally(t, verb, obj, patch)
	}
}

// recordGet names the object from key: before a Get, obj is still empty. The
// copy is only made when a Tally is listening.
func (r recorder) recordGet(ctx context.Context, key client.ObjectKey, obj client.Object) {
	r.metrics.countCall(r.controller, VerbGet)
	if t := TallyFrom(ctx); t != nil {
		r.tally(t, VerbGet, keyed(obj, key), nil)
	}
}

func (r recorder) tally(t *Tally, verb Verb, obj runtime.Object, patch client.Patch) {
	call := Call{Verb: verb}
	if obj == nil {
		t.add(call)
		return
	}
	if r.scheme != nil {
		if gvks, _, err := r.scheme.ObjectKinds(obj); err == nil && len(gvks) > 0 {
			call.Kind = gvks[0].Kind
		}
	}
	if o, ok := obj.(client.Object); ok {
		call.Namespace, call.Name = o.GetNamespace(), o.GetName()
		if patch != nil && t.patches {
			if data, err := patch.Data(o); err == nil {
				s := string(data)
				if len(s) > maxPatchBody {
					s = s[:maxPatchBody] + "…"
				}
				call.Patch = s
			}
		}
	}
	t.add(call)
}

type countingReader struct {
	reader client.Reader
	rec    recorder
}

func (r *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.rec.recordGet(ctx, key, obj)
	return r.reader.Get(ctx, key, obj, opts...)
}

func (r *countingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	r.rec.record(ctx, VerbList, list, nil)
	return r.reader.List(ctx, list, opts...)
}

// keyed returns a copy of obj named after key.
func keyed(obj client.Object, key client.ObjectKey) client.Object {
	o, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return obj
	}
	o.SetNamespace(key.Namespace)
	o.SetName(key.Name)
	return o
}

type countingClient struct {
	client.Client
	controller string
	metrics    *Metrics
}

func (c *countingClient) rec() recorder {
	return recorder{controller: c.controller, metrics: c.metrics, scheme: c.Scheme()}
}

func (c *countingClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.rec().recordGet(ctx, key, obj)
	return c.Client.Get(ctx, key, obj, opts...)
}

func (c *countingClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.rec().record(ctx, VerbList, list, nil)
	return c.Client.List(ctx, list, opts...)
}

func (c *countingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	c.rec().record(ctx, VerbCreate, obj, nil)
	return c.Client.Create(ctx, obj, opts...)
}

func (c *countingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	c.rec().record(ctx, VerbUpdate, obj, nil)
	return c.Client.Update(ctx, obj, opts...)
}

func (c *countingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	c.rec().record(ctx, VerbPatch, obj, patch)
	return c.Client.Patch(ctx, obj, patch, opts...)
}

func (c *countingClient) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	c.rec().record(ctx, VerbPatch, nil, nil)
	return c.Client.Apply(ctx, obj, opts...)
}

func (c *countingClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	c.rec().record(ctx, VerbDelete, obj, nil)
	return c.Client.Delete(ctx, obj, opts...)
}

func (c *countingClient) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	c.rec().record(ctx, VerbDeleteCollection, obj, nil)
	return c.Client.DeleteAllOf(ctx, obj, opts...)
}

func (c *countingClient) Status() client.SubResourceWriter {
	return &countingStatusWriter{writer: c.Client.Status(), rec: c.rec()}
}

func (c *countingClient) SubResource(subResource string) client.SubResourceClient {
	return &countingSubResourceClient{inner: c.Client.SubResource(subResource), rec: c.rec(), status: subResource == "status"}
}

type countingStatusWriter struct {
	writer client.SubResourceWriter
	rec    recorder
}

func (w *countingStatusWriter) Create(ctx context.Context, obj client.Object, sub client.Object, opts ...client.SubResourceCreateOption) error {
	w.rec.record(ctx, VerbCreate, obj, nil)
	return w.writer.Create(ctx, obj, sub, opts...)
}

func (w *countingStatusWriter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	w.rec.record(ctx, VerbStatusUpdate, obj, nil)
	return w.writer.Update(ctx, obj, opts...)
}

func (w *countingStatusWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	w.rec.record(ctx, VerbStatusPatch, obj, patch)
	return w.writer.Patch(ctx, obj, patch, opts...)
}

func (w *countingStatusWriter) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	w.rec.record(ctx, VerbStatusPatch, nil, nil)
	return w.writer.Apply(ctx, obj, opts...)
}

type countingSubResourceClient struct {
	inner  client.SubResourceClient
	rec    recorder
	status bool
}

func (s *countingSubResourceClient) Get(ctx context.Context, obj client.Object, sub client.Object, opts ...client.SubResourceGetOption) error {
	s.rec.record(ctx, VerbGet, obj, nil)
	return s.inner.Get(ctx, obj, sub, opts...)
}

func (s *countingSubResourceClient) Create(ctx context.Context, obj client.Object, sub client.Object, opts ...client.SubResourceCreateOption) error {
	s.rec.record(ctx, VerbCreate, obj, nil)
	return s.inner.Create(ctx, obj, sub, opts...)
}

func (s *countingSubResourceClient) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	s.rec.record(ctx, s.pick(VerbStatusUpdate, VerbUpdate), obj, nil)
	return s.inner.Update(ctx, obj, opts...)
}

func (s *countingSubResourceClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	s.rec.record(ctx, s.pick(VerbStatusPatch, VerbPatch), obj, patch)
	return s.inner.Patch(ctx, obj, patch, opts...)
}

func (s *countingSubResourceClient) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	s.rec.record(ctx, s.pick(VerbStatusPatch, VerbPatch), nil, nil)
	return s.inner.Apply(ctx, obj, opts...)
}

func (s *countingSubResourceClient) pick(status, other Verb) Verb {
	if s.status {
		return status
	}
	return other
}
