package metrics

// AddCounts adds another host's messages, as Top(n) with n at least the
// number of texts returned them: counts per text, and rest, the messages
// whose text was not kept. Counting them here is as if they had arrived on
// this host, so a cluster's counts merge as its shards' do.
func (m *ServerMessages) AddCounts(counts []MessageCount, rest int) {
	o := ServerMessages{total: rest, dropped: rest}
	for _, c := range counts {
		if c.Count <= 0 {
			continue
		}
		if o.counts == nil {
			o.counts = make(map[string]*int, len(counts))
		}
		n := c.Count
		if p := o.counts[c.Text]; p != nil {
			n += *p
		}
		o.counts[c.Text] = &n
		o.total += c.Count
	}
	m.merge(&o)
}
