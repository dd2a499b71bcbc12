package datasets

import "testing"

func TestMMBucketConfigLiteral(t *testing.T) {
	tests := []struct {
		in   string
		want MMBucketConfig
		err  bool
	}{
		{in: "{(256, 256, 1): 0.5, (720, 1280, 16): 0.1,}", want: MMBucketConfig{{256, 256, 1, 0.5}, {720, 1280, 16, 0.1}}},
		{in: `{"(1,2,3)": "0.5", '(1, 2, 3)': 2}`, want: MMBucketConfig{{1, 2, 3, 2}}},
		{in: "{(1, 2, True): -1, (0x10, 1_0, 1): 1e-1}", want: MMBucketConfig{{1, 2, 1, -1}, {16, 10, 1, 0.1}}},
		{in: "{}", want: nil},
		{in: "{(1, 2, 3.0): 1}", err: true},
		{in: "{(1, 2): 1}", err: true},
		{in: "{'x': 1}", err: true},
		{in: "{(1, 2, 3): None}", err: true},
		{in: "{(1, 2, 3): 'high'}", err: true},
		{in: "[(1, 2, 3)]", err: true},
		{in: "{(1, 2, 3): 1", err: true},
		{in: "{[1]: 1}", err: true},
		{in: "{(1, 2, 03): 1}", err: true},
		{in: "{(1, 2, x): 1}", err: true},
	}
	for _, tt := range tests {
		var c MMBucketConfig
		err := c.UnmarshalFlag(tt.in)
		if (err != nil) != tt.err {
			t.Errorf("MMBucketConfig(%q) error = %v, want error %v", tt.in, err, tt.err)
			continue
		}
		if tt.err {
			continue
		}
		if len(c) != len(tt.want) {
			t.Errorf("MMBucketConfig(%q) = %v, want %v", tt.in, c, tt.want)
			continue
		}
		for i := range c {
			if c[i] != tt.want[i] {
				t.Errorf("MMBucketConfig(%q)[%d] = %v, want %v", tt.in, i, c[i], tt.want[i])
			}
		}
	}
}

func TestBucketKeyError(t *testing.T) {
	var c MMBucketConfig
	err := c.UnmarshalFlag(`{"abc": 1}`)
	if err == nil || err.Error() != "invalid bucket key 'abc': want a tuple (H, W, T) of ints" {
		t.Errorf("error %v", err)
	}
}
