package datasets

import (
	"reflect"
	"strings"
)

// Flags are the dataset option groups of `vllm bench serve`, in the order
// it registers them. Each group is declared beside the dataset that reads
// it, as a struct whose fields are its options; the tags are the flag
// layer's option spec:
//
//	long         the option name without "--"
//	default      argparse's default, as text (absent: None)
//	default-mask what the help shows as the default instead
//	choice       one allowed value (repeated)
//	description  the help text
//	copy-of      the common option whose value, when given, replaces this
//	             one ("input-len", "output-len"), as main_async copies it
//
// A pointer field is nil when Python's value would be None; a string
// field whose default is None is "" when not given. The package reads no
// command line: the flag layer (package bench) fills these values.
type Flags struct {
	CustomFlags           `group:"custom dataset options"`
	SpecBenchFlags        `group:"spec bench dataset options"`
	SonnetFlags           `group:"sonnet dataset options"`
	ShareGPTFlags         `group:"sharegpt dataset options"`
	TimedTraceFlags       `group:"timed-trace dataset options"`
	BlazeditFlags         `group:"blazedit dataset options"`
	ASRFlags              `group:"asr dataset options"`
	HFFlags               `group:"hf dataset options"`
	BFCLFlags             `group:"BFCL dataset options"`
	PrefixRepetitionFlags `group:"prefix repetition dataset options"`
	SpeedBenchFlags       `group:"speed bench dataset options"`
	RandomFlags           `group:"random dataset options"`
	RandomMMFlags         `group:"random multimodal dataset options extended from random dataset"`
}

// CopyLengths is main_async's copying of --input-len and --output-len
// (nil when not given) into every option tagged copy-of with that name.
func (f *Flags) CopyLengths(inputLen, outputLen *int) {
	copies := map[string]*int{"input-len": inputLen, "output-len": outputLen}
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		t := v.Type()
		for i := range t.NumField() {
			field, fv := t.Field(i), v.Field(i)
			if field.Anonymous && field.Type.Kind() == reflect.Struct {
				walk(fv)
				continue
			}
			n := copies[field.Tag.Get("copy-of")]
			if n == nil {
				continue
			}
			if fv.Kind() == reflect.Pointer {
				fv.Set(reflect.ValueOf(new(int)))
				fv = fv.Elem()
			}
			fv.SetInt(int64(*n))
		}
	}
	walk(reflect.ValueOf(f).Elem())
}

// CommaList is a comma-separated flag value split at parse time, empty
// items dropped (Python's --bfcl-categories).
type CommaList []string

// UnmarshalFlag splits s at commas.
func (l *CommaList) UnmarshalFlag(s string) error {
	var out CommaList
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	*l = out
	return nil
}

// JSONFlag is a flag value argparse passes through json.loads. The flag
// layer checks it and stores it in its canonical JSON form; empty means
// the option has no value.
type JSONFlag []byte

// UnmarshalFlag stores s as it is; the flag layer has checked it.
func (j *JSONFlag) UnmarshalFlag(s string) error {
	*j = JSONFlag(s)
	return nil
}
