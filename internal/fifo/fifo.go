// Package fifo is a first-in, first-out queue that reuses its array, so a
// queue in a steady state allocates nothing: the shard loop's ready list of
// connections and the mock server's waiting streams are each one.
package fifo

// Queue holds values in the order they were pushed. The zero value is an
// empty queue. A Queue is not safe for concurrent use: its owner's thread
// alone touches it.
type Queue[T any] struct {
	items []T // items[head:] are queued; items[:head] are cleared
	head  int
}

// Len returns the number of values queued.
func (q *Queue[T]) Len() int { return len(q.items) - q.head }

// Push appends v. It allocates only when the queued values fill the array:
// once the popped half of it is the larger, the queued values move to its
// start instead, so a queue that drains as fast as it fills keeps one array.
func (q *Queue[T]) Push(v T) {
	if q.head > 0 && q.head*2 >= len(q.items) {
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items, q.head = q.items[:n], 0
	}
	q.items = append(q.items, v)
}

// Pop removes and returns the value pushed first; the queue must not be
// empty. Its slot is cleared, so the queue keeps no reference to it.
func (q *Queue[T]) Pop() T {
	var zero T
	v := q.items[q.head]
	q.items[q.head] = zero
	q.head++
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	}
	return v
}
