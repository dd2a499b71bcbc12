package fifo

import "testing"

// TestQueueOrder pushes and pops in uneven runs against a plain slice model.
func TestQueueOrder(t *testing.T) {
	var q Queue[int]
	var model []int
	next := 0
	for round, run := range []struct{ push, pop int }{
		{1, 1}, {5, 2}, {3, 6}, {10, 3}, {1, 4}, {20, 20}, {7, 0}, {0, 7}, {64, 63}, {2, 3},
	} {
		for range run.push {
			q.Push(next)
			model = append(model, next)
			next++
		}
		for range run.pop {
			if got, want := q.Pop(), model[0]; got != want {
				t.Fatalf("round %d: Pop() = %d, want %d", round, got, want)
			}
			model = model[1:]
		}
		if q.Len() != len(model) {
			t.Fatalf("round %d: Len() = %d, want %d", round, q.Len(), len(model))
		}
	}
}

// TestQueueReleases checks that a popped value leaves no reference behind,
// in the slot it left or after the queue moved its values down.
func TestQueueReleases(t *testing.T) {
	var q Queue[*int]
	for i := range 8 {
		q.Push(&i)
	}
	for range 6 {
		q.Pop()
	}
	q.Push(new(int)) // moves the two queued values to the array's start
	for i, p := range q.items[:cap(q.items)] {
		if p != nil && i >= q.head+q.Len() {
			t.Errorf("slot %d beyond the queued values still holds a value", i)
		}
	}
	for i := range q.head {
		if q.items[i] != nil {
			t.Errorf("popped slot %d still holds a value", i)
		}
	}
}

// TestQueueSteadyStateAllocs checks that a queue which drains as fast as it
// fills allocates nothing once its array has grown: the shard loop pushes
// and pops its ready list on every turn.
func TestQueueSteadyStateAllocs(t *testing.T) {
	var q Queue[*int]
	v := new(int)
	for range 16 {
		q.Push(v)
	}
	allocs := testing.AllocsPerRun(1000, func() {
		q.Push(v)
		q.Push(v)
		q.Pop()
		q.Pop()
	})
	if allocs != 0 {
		t.Errorf("steady push and pop allocate %.1f times, want 0", allocs)
	}
	for q.Len() > 0 {
		q.Pop()
	}
	if q.head != 0 || len(q.items) != 0 {
		t.Errorf("an emptied queue keeps head %d and %d items, want its array's start", q.head, len(q.items))
	}
}

func BenchmarkQueue(b *testing.B) {
	var q Queue[*int]
	v := new(int)
	b.ReportAllocs()
	for b.Loop() {
		for range 64 {
			q.Push(v)
		}
		for range 64 {
			q.Pop()
		}
	}
}
