package py

// Dict is a Python dict: keys keep the position of their first insertion,
// and setting an existing key replaces its value in place, as d[k] = v,
// d.update(e) and {**d, **e} do. The zero value is not usable; make one
// with NewDict.
type Dict[K comparable, V any] struct {
	keys []K
	vals map[K]V
}

// Object is a dict with str keys, the shape of a JSON object.
type Object = Dict[string, any]

// NewDict returns an empty dict with room for capacity keys.
func NewDict[K comparable, V any](capacity int) *Dict[K, V] {
	return &Dict[K, V]{keys: make([]K, 0, capacity), vals: make(map[K]V, capacity)}
}

// NewObject returns an empty Object.
func NewObject() *Object { return NewDict[string, any](0) }

// Set is d[key] = v.
func (d *Dict[K, V]) Set(key K, v V) {
	if _, ok := d.vals[key]; !ok {
		d.keys = append(d.keys, key)
	}
	d.vals[key] = v
}

// Get is d.get(key), with ok saying whether key is present.
func (d *Dict[K, V]) Get(key K) (v V, ok bool) {
	v, ok = d.vals[key]
	return v, ok
}

// Value is d.get(key): the zero V when key is absent.
func (d *Dict[K, V]) Value(key K) V { return d.vals[key] }

// Has is `key in d`.
func (d *Dict[K, V]) Has(key K) bool {
	_, ok := d.vals[key]
	return ok
}

// Delete is `if key in d: del d[key]`.
func (d *Dict[K, V]) Delete(key K) {
	if _, ok := d.vals[key]; !ok {
		return
	}
	delete(d.vals, key)
	for i, k := range d.keys {
		if k == key {
			d.keys = append(d.keys[:i], d.keys[i+1:]...)
			break
		}
	}
}

// Update is d.update(other): other's keys in its order.
func (d *Dict[K, V]) Update(other *Dict[K, V]) {
	for _, k := range other.keys {
		d.Set(k, other.vals[k])
	}
}

// Len is len(d).
func (d *Dict[K, V]) Len() int { return len(d.keys) }

// Keys is list(d): the keys in order. The slice is the dict's own; the
// caller must not change it.
func (d *Dict[K, V]) Keys() []K { return d.keys }

// Copy is d.copy(): a new dict with the same keys, order and values.
func (d *Dict[K, V]) Copy() *Dict[K, V] {
	c := NewDict[K, V](len(d.keys))
	c.Update(d)
	return c
}

// each calls f with every key and value in order, as any, until f
// returns an error; json.dumps reads every instance through it.
func (d *Dict[K, V]) each(f func(k, v any) error) error {
	for _, k := range d.keys {
		if err := f(k, d.vals[k]); err != nil {
			return err
		}
	}
	return nil
}
