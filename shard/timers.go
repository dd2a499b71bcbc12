package shard

// deadlines is a min-heap of connections ordered by deadlineNs; its head
// sets epoll_wait's timeout. Each connection is in it at most once and
// remembers its position, so changing or removing a deadline is O(log n)
// without a search.
type deadlines []*conn

// set gives c a deadline (run time), replacing any it had.
func (h *deadlines) set(c *conn, deadlineNs int64) {
	c.deadlineNs = deadlineNs
	if c.heapIndex >= 0 {
		h.fix(c.heapIndex)
		return
	}
	c.heapIndex = len(*h)
	*h = append(*h, c)
	h.up(c.heapIndex)
}

// clear removes c's deadline, if it has one.
func (h *deadlines) clear(c *conn) {
	i := c.heapIndex
	if i < 0 {
		return
	}
	last := len(*h) - 1
	if i != last {
		h.swap(i, last)
	}
	(*h)[last] = nil
	*h = (*h)[:last]
	c.heapIndex = -1
	if i != last {
		h.fix(i)
	}
}

// next returns the connection with the earliest deadline, or nil.
func (h deadlines) next() *conn {
	if len(h) == 0 {
		return nil
	}
	return h[0]
}

func (h deadlines) fix(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

func (h deadlines) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIndex = i
	h[j].heapIndex = j
}

func (h deadlines) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if h[parent].deadlineNs <= h[i].deadlineNs {
			return
		}
		h.swap(i, parent)
		i = parent
	}
}

func (h deadlines) down(i int) bool {
	start := i
	for {
		child := 2*i + 1
		if child >= len(h) {
			break
		}
		if r := child + 1; r < len(h) && h[r].deadlineNs < h[child].deadlineNs {
			child = r
		}
		if h[i].deadlineNs <= h[child].deadlineNs {
			break
		}
		h.swap(i, child)
		i = child
	}
	return i > start
}
