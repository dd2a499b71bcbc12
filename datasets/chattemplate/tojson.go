package chattemplate

import (
	"bytes"
	"fmt"

	"github.com/stampede-bench/stampede/internal/py"
)

// writeJSON is Python's json.dumps(v, **o) over template values: py's
// encoder, told how Python names the types it refuses and how deep a
// value may nest.
func writeJSON(b *bytes.Buffer, v any, o py.JSONOptions) error {
	o.Default = func(v any) (any, error) {
		return nil, fmt.Errorf("object of type %s is not JSON serializable", typeName(v))
	}
	o.TypeName = typeName
	o.MaxDepth = maxNesting
	return py.AppendJSON(b, v, &o)
}
