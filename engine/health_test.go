package engine

import (
	"reflect"
	"testing"

	"github.com/stampede-bench/stampede/shard"
)

// TestShardHealthCopiesEveryField fills every field of a shard.Health and
// checks that shardHealth carries each one over: a field added to the
// shard's account must be published too.
func TestShardHealthCopiesEveryField(t *testing.T) {
	var in shard.Health
	v := reflect.ValueOf(&in).Elem()
	fill(t, v)
	out := reflect.ValueOf(shardHealth(in))
	if v.NumField() != out.NumField() {
		t.Fatalf("shard.Health has %d fields, ShardHealth %d", v.NumField(), out.NumField())
	}
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		got := out.FieldByName(name)
		if !got.IsValid() {
			t.Errorf("ShardHealth has no field %s", name)
			continue
		}
		if !reflect.DeepEqual(flatten(got), flatten(v.Field(i))) {
			t.Errorf("%s: published %v, shard said %v", name, got, v.Field(i))
		}
	}
}

// fill sets every field of v to a value of its own, not its zero.
func fill(t *testing.T, v reflect.Value) {
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(i + 1))
		case reflect.Uint32:
			f.SetUint(uint64(i + 1))
		case reflect.Slice:
			// One element of its own, filled in turn.
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
			fill(t, f.Index(0))
		case reflect.String:
			f.SetString(v.Type().Field(i).Name)
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Struct:
			fill(t, f)
		default:
			t.Fatalf("field %s of kind %s: teach fill about it", v.Type().Field(i).Name, f.Kind())
		}
	}
}

// flatten is v's fields in order, so that structs of two types compare.
func flatten(v reflect.Value) []any {
	if v.Kind() == reflect.Slice {
		var out []any
		for i := range v.Len() {
			out = append(out, flatten(v.Index(i))...)
		}
		return out
	}
	if v.Kind() != reflect.Struct {
		return []any{v.Interface()}
	}
	var out []any
	for i := range v.NumField() {
		out = append(out, flatten(v.Field(i))...)
	}
	return out
}
