package cli

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/datasets"
	"github.com/stampede-bench/stampede/internal/py"
)

// namespace is Python's vars(args) for p (plan.Plan.Args says what it
// holds): the option table walked in order, each field under its long
// name's dest, with the value p holds.
func namespace(p *plan.Plan) py.Object {
	var d py.Object
	addFlagFields(&d, reflect.ValueOf(flagsOf(p)).Elem())
	d.Set("self_timed", p.SelfTimed)
	d.Delete("no_self_timed")
	return d
}

func addFlagFields(d *py.Object, v reflect.Value) {
	t := v.Type()
	for i := range t.NumField() {
		field := t.Field(i)
		if field.Anonymous && field.Type.Kind() == reflect.Struct {
			addFlagFields(d, v.Field(i))
			continue
		}
		long := field.Tag.Get("long")
		if long == "" || long == "help" {
			continue
		}
		_, hasDefault := field.Tag.Lookup("default")
		value := flagValue(v.Field(i), hasDefault)
		if field.Tag.Get("value-name") == "SECRET" && value != nil {
			// A secret given on the command line is not written to
			// the files that record the run's arguments.
			value = "<redacted>"
		}
		d.Set(strings.ReplaceAll(long, "-", "_"), value)
	}
}

// flagValue is the Python value of one option. A string option without a
// default is None in Python until given, and "" here.
func flagValue(v reflect.Value, hasDefault bool) any {
	switch x := v.Interface().(type) {
	case datasets.JSONFlag:
		return flagValue(reflect.ValueOf(plan.JSONText(x)), hasDefault)
	case plan.JSONText:
		if len(x) == 0 {
			return nil
		}
		v, err := py.Reencode(x)
		if err != nil {
			return nil // cannot happen: the option parsed it
		}
		return py.RawJSON(v)
	case BucketConfig:
		d := py.NewObject()
		for _, bucket := range x {
			d.Set(fmt.Sprintf("(%d, %d, %d)", bucket.Height, bucket.Width, bucket.Frames), bucket.Probability)
		}
		return d
	case plan.CPUList:
		if x == nil {
			return nil
		}
		return []int(x)
	case CommaList:
		if x == nil {
			return nil
		}
		return []string(x)
	case plan.AddrList:
		if x == nil {
			return nil
		}
		out := make([]string, len(x))
		for i, a := range x {
			out[i] = a.String()
		}
		return out
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return flagValue(v.Elem(), true)
	case reflect.Bool:
		return v.Bool()
	case reflect.Int, reflect.Int64, reflect.Int32:
		return v.Int()
	case reflect.Float64:
		return v.Float()
	case reflect.String:
		if v.String() == "" && !hasDefault {
			return nil
		}
		return v.String()
	case reflect.Slice:
		if v.IsNil() {
			return nil
		}
		if s, ok := v.Interface().([]string); ok {
			return s
		}
	}
	// write_to_json's fallback for values json cannot encode.
	return "<" + v.Type().Name() + " is not JSON serializable>"
}
