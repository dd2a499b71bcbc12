package py

import (
	"iter"
	"maps"
	"slices"
)

// Dict is a Python dict: keys keep the position of their first insertion,
// and setting an existing key replaces its value in place, as d[k] = v,
// d.update(e) and {**d, **e} do. The zero value is an empty dict.
//
// A small dict is one slice searched in order, as most JSON objects and
// request bodies are; a larger one also keeps an index of positions.
type Dict[K comparable, V any] struct {
	items []entry[K, V]
	index map[K]int // each key's position, once there are more than linearMax
}

type entry[K comparable, V any] struct {
	key K
	val V
}

// linearMax is the size up to which a search in order beats hashing.
const linearMax = 16

// Object is a dict with str keys, the shape of a JSON object.
type Object = Dict[string, any]

// NewDict returns an empty dict with room for capacity keys.
func NewDict[K comparable, V any](capacity int) *Dict[K, V] {
	return &Dict[K, V]{items: make([]entry[K, V], 0, capacity)}
}

// NewObject returns an empty Object.
func NewObject() *Object { return new(Object) }

// find returns key's position, or -1.
func (d *Dict[K, V]) find(key K) int {
	if d.index != nil {
		if i, ok := d.index[key]; ok {
			return i
		}
		return -1
	}
	for i := range d.items {
		if d.items[i].key == key {
			return i
		}
	}
	return -1
}

// Set is d[key] = v.
func (d *Dict[K, V]) Set(key K, v V) {
	if i := d.find(key); i >= 0 {
		d.items[i].val = v
		return
	}
	d.items = append(d.items, entry[K, V]{key, v})
	switch {
	case d.index != nil:
		d.index[key] = len(d.items) - 1
	case len(d.items) > linearMax:
		d.index = make(map[K]int, 2*len(d.items))
		for i, e := range d.items {
			d.index[e.key] = i
		}
	}
}

// Get is d.get(key), with ok saying whether key is present.
func (d *Dict[K, V]) Get(key K) (v V, ok bool) {
	if i := d.find(key); i >= 0 {
		return d.items[i].val, true
	}
	return v, false
}

// Value is d.get(key): the zero V when key is absent.
func (d *Dict[K, V]) Value(key K) V {
	v, _ := d.Get(key)
	return v
}

// Has is `key in d`.
func (d *Dict[K, V]) Has(key K) bool { return d.find(key) >= 0 }

// Delete is `if key in d: del d[key]`.
func (d *Dict[K, V]) Delete(key K) {
	i := d.find(key)
	if i < 0 {
		return
	}
	d.items = append(d.items[:i], d.items[i+1:]...)
	if d.index != nil {
		delete(d.index, key)
		for j := i; j < len(d.items); j++ {
			d.index[d.items[j].key] = j
		}
	}
}

// Update is d.update(other): other's keys in its order.
func (d *Dict[K, V]) Update(other *Dict[K, V]) {
	for _, e := range other.items {
		d.Set(e.key, e.val)
	}
}

// Len is len(d).
func (d *Dict[K, V]) Len() int { return len(d.items) }

// Keys is list(d): a new slice of the keys in order.
func (d *Dict[K, V]) Keys() []K {
	keys := make([]K, len(d.items))
	for i, e := range d.items {
		keys[i] = e.key
	}
	return keys
}

// All is d.items(): every key and value in order.
func (d *Dict[K, V]) All() iter.Seq2[K, V] {
	return func(yield func(K, V) bool) {
		for _, e := range d.items {
			if !yield(e.key, e.val) {
				return
			}
		}
	}
}

// Copy is d.copy(): a dict with the same keys, order and values that
// changes apart from d.
func (d *Dict[K, V]) Copy() Dict[K, V] {
	return Dict[K, V]{items: slices.Clone(d.items), index: maps.Clone(d.index)}
}

// each calls f with every key and value in order, as any, until f
// returns an error; json.dumps and repr read every instance through it.
func (d *Dict[K, V]) each(f func(k, v any) error) error {
	for _, e := range d.items {
		if err := f(e.key, e.val); err != nil {
			return err
		}
	}
	return nil
}
