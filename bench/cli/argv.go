package cli

import (
	"bytes"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	flags "github.com/jessevdk/go-flags"
	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/datasets"
	"github.com/stampede-bench/stampede/internal/py"
)

// This file applies the command-line rules of vLLM's FlexibleArgumentParser
// and of CPython's argparse (3.12) to argv, so stampede accepts and rejects
// exactly what `vllm bench serve` does, with the same messages. What it
// accepts becomes one assignment per option (the values of its last
// occurrence, checked and in canonical form), which go-flags stores into
// Flags.

// nargs is how many values an option takes, in argparse's terms.
type nargs uint8

const (
	nargsNone       nargs = iota // store_true, BooleanOptionalAction, help
	nargsOne                     // the default: exactly one
	nargsZeroOrMore              // "*"
	nargsOneOrMore               // "+"
	nargsZeroOrOne               // "?": the value is optional
)

// action is one argparse action: an option with all its spellings.
type action struct {
	optionStrings []string // "--seed"; "-h", "--help"; "--self-timed", "--no-self-timed"
	flag          *flags.Option
	negated       *flags.Option // --no-self-timed
	nargs         nargs
	typeName      string                       // Python type function name, for "invalid %s value"
	convert       func(string) (string, error) // nil: value taken as given
	// explains: convert's error says what is wrong and what is accepted,
	// and is printed after Python's "invalid %s value" (stampede's own
	// options only; Python's keep Python's text).
	explains bool
	choices  []string
	help     bool
	// own marks stampede's additions (ownGroups): an abbreviation reaches
	// them only when it matches none of Python's option strings.
	own bool
}

// name is how argparse names the action in messages: "--seed", "-h/--help".
func (a *action) name() string { return strings.Join(a.optionStrings, "/") }

// actionTable is every action in registration order, and an index of
// every option string.
type actionTable struct {
	actions []*action
	strings []string // option strings in registration order
	byName  map[string]*action
}

// ownGroups hold the options stampede adds to `vllm bench serve`'s: its
// own, the multi-process fork's and the Rust client's. They must never make one of Python's
// abbreviations ambiguous.
var ownGroups = []string{"stampede options", "multi-process client options", "vllm-bench (Rust client) options"}

func newActionTable(p *flags.Parser) *actionTable {
	t := &actionTable{byName: map[string]*action{}}
	own := map[*flags.Option]bool{}
	for _, g := range p.Groups()[0].Groups() {
		if contains(ownGroups, g.ShortDescription) {
			for _, o := range g.Options() {
				own[o] = true
			}
		}
	}
	for _, o := range registrationOrder(p) {
		if o.LongName == "no-self-timed" {
			t.addString("--no-self-timed", t.byName["--self-timed"])
			t.byName["--self-timed"].negated = o
			continue
		}
		a := newAction(o)
		a.own = own[o]
		t.actions = append(t.actions, a)
		for _, s := range a.optionStrings {
			t.addString(s, a)
		}
	}
	return t
}

// registrationOrder lists the options in the order vllm bench serve
// registers them, which is the order argparse lists the candidates of an
// ambiguous prefix in: help; the dataset options (add_dataset_parser: the
// top-level ones up to --disable-shuffle, then the dataset groups); the
// serve options, with the sampling group after --request-id-prefix; then
// stampede's additions.
func registrationOrder(p *flags.Parser) []*flags.Option {
	top := p.Groups()[0]
	groups := map[string][]*flags.Option{}
	var names []string
	for _, g := range top.Groups() {
		groups[g.ShortDescription] = g.Options()
		names = append(names, g.ShortDescription)
	}
	var order []*flags.Option
	serveStart := 0
	for i, o := range top.Options() {
		if o.LongName == "label" {
			serveStart = i
			break
		}
	}
	order = append(order, top.Options()[:serveStart]...)
	for _, name := range names {
		if strings.HasSuffix(name, "dataset options") || strings.HasPrefix(name, "random multimodal") {
			order = append(order, groups[name]...)
		}
	}
	for _, o := range top.Options()[serveStart:] {
		order = append(order, o)
		if o.LongName == "request-id-prefix" {
			order = append(order, groups["sampling parameters"]...)
		}
	}
	for _, name := range names {
		if !strings.Contains(name, "dataset options") && !strings.HasPrefix(name, "random multimodal") && name != "sampling parameters" {
			order = append(order, groups[name]...)
		}
	}
	return order
}

func (t *actionTable) addString(s string, a *action) {
	if !contains(a.optionStrings, s) {
		a.optionStrings = append(a.optionStrings, s)
	}
	t.strings = append(t.strings, s)
	t.byName[s] = a
}

var (
	jsonTextType     = reflect.TypeOf(plan.JSONText(nil))
	jsonFlagType     = reflect.TypeOf(datasets.JSONFlag(nil))
	bucketConfigType = reflect.TypeOf(BucketConfig(nil))
	commaListType    = reflect.TypeOf(CommaList(nil))
	cpuListType      = reflect.TypeOf(plan.CPUList(nil))
	addrListType     = reflect.TypeOf(plan.AddrList(nil))
)

func newAction(o *flags.Option) *action {
	a := &action{flag: o, nargs: nargsOne, choices: o.Choices}
	if o.ShortName != 0 {
		a.optionStrings = append(a.optionStrings, "-"+string(o.ShortName))
	}
	a.optionStrings = append(a.optionStrings, "--"+o.LongName)
	field := o.Field()
	typ := field.Type
	if typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	switch {
	case o.LongName == "help":
		a.nargs, a.help = nargsNone, true
	case typ.Kind() == reflect.Bool:
		a.nargs = nargsNone
	case typ == jsonTextType:
		a.typeName, a.convert = "loads", viaUnmarshaler(new(plan.JSONText))
	case typ == jsonFlagType:
		// A dataset's JSON option: checked here and stored canonical.
		a.typeName, a.convert = "loads", func(s string) (string, error) {
			var t plan.JSONText
			err := t.UnmarshalFlag(s)
			return string(t), err
		}
	case typ == bucketConfigType:
		a.typeName, a.convert = "_parse_mm_bucket_config", viaUnmarshaler(new(BucketConfig))
	case typ == commaListType:
		a.typeName = "<lambda>"
	case typ == cpuListType:
		a.typeName, a.convert = "CPU list", viaUnmarshaler(new(plan.CPUList))
	case typ == addrListType:
		a.typeName, a.convert, a.explains = "address list", viaUnmarshaler(new(plan.AddrList)), true
	case typ.Kind() == reflect.Slice:
		a.typeName = "str"
		switch field.Tag.Get("nargs") {
		case "*":
			a.nargs = nargsZeroOrMore
		case "+":
			a.nargs = nargsOneOrMore
		}
	case field.Tag.Get("nargs") == "?":
		a.typeName, a.nargs = "str", nargsZeroOrOne
	case typ.Kind() == reflect.Int:
		a.typeName, a.convert = "int", func(s string) (string, error) {
			v, err := parsePyInt(s)
			return strconv.FormatInt(v, 10), err
		}
	case typ.Kind() == reflect.Float64:
		a.typeName, a.convert = "float", func(s string) (string, error) {
			v, err := py.ParseFloat(s)
			return strconv.FormatFloat(v, 'g', -1, 64), err
		}
	default:
		a.typeName = "str"
	}
	return a
}

// viaUnmarshaler checks a value with the type's own UnmarshalFlag and
// passes the text on unchanged; go-flags parses it again when storing.
func viaUnmarshaler(u flags.Unmarshaler) func(string) (string, error) {
	return func(s string) (string, error) { return s, u.UnmarshalFlag(s) }
}

// parsedArgv is what the argv pass found.
type parsedArgv struct {
	// assignments are the options given, each with the values of its last
	// occurrence (checked and in canonical form), in order of first
	// appearance.
	assignments []*assignment
	// given lists the long names of options that appeared.
	given map[string]bool
	// help is set when -h/--help was reached; helpKeyword is the filter
	// of --help=keyword.
	help        bool
	helpKeyword string
	// warnings are FlexibleArgumentParser's warnings (duplicate keys).
	warnings []string
}

// argError is an argparse error for a given action: "argument X: msg".
func argError(a *action, format string, args ...any) *py.UsageError {
	return &py.UsageError{Msg: "argument " + a.name() + ": " + fmt.Sprintf(format, args...)}
}

// parseArgv runs FlexibleArgumentParser's rewriting and argparse's option
// matching over args.
func (t *actionTable) parseArgv(args []string) (*parsedArgv, error) {
	out := &parsedArgv{given: map[string]bool{}}
	args, err := flexibleRewrite(args, out)
	if err != nil {
		return nil, err
	}

	// Classify every token first, as argparse does: an ambiguous prefix is
	// reported before any value is converted.
	matches := make([]*optionMatch, len(args))
	terminator := len(args)
	for i, arg := range args {
		if arg == "--" {
			terminator = i
			break
		}
		m, err := t.matchOption(arg)
		if err != nil {
			return nil, err
		}
		matches[i] = m
	}
	isValue := func(i int) bool { return i < len(args) && i != terminator && matches[i] == nil }

	assigned := map[*action]*assignment{}
	var extras []string
	for i := 0; i < len(args); {
		if i == terminator {
			extras = append(extras, args[i+1:]...)
			break
		}
		m := matches[i]
		if m == nil || m.action == nil {
			extras = append(extras, args[i]) // a stray value or an unknown option
			i++
			continue
		}
		raw, next, err := takeValues(m, args, i+1, isValue)
		if err != nil {
			return nil, err
		}
		if m.action.help {
			out.help = true
			return out, nil
		}
		values, err := m.action.check(raw)
		if err != nil {
			return nil, err
		}
		if prev, ok := assigned[m.action]; ok {
			prev.option, prev.values = m.option, values
		} else {
			assigned[m.action] = &assignment{action: m.action, option: m.option, values: values}
			out.assignments = append(out.assignments, assigned[m.action])
		}
		i = next
	}
	if len(extras) > 0 {
		return nil, py.UsageErrorf("unrecognized arguments: %s", strings.Join(extras, " "))
	}

	for _, as := range out.assignments {
		out.given[as.flag().LongName] = true
	}
	return out, nil
}

// takeValues collects an option's values: its explicit "=value", or the
// value tokens from args[next] on that its nargs admits. It returns the
// index of the first token not consumed.
func takeValues(m *optionMatch, args []string, next int, isValue func(int) bool) ([]string, int, error) {
	a := m.action
	if m.explicit != nil {
		if a.nargs == nargsNone {
			return nil, 0, argError(a, "ignored explicit argument %s", py.StrRepr(*m.explicit))
		}
		return []string{*m.explicit}, next, nil
	}
	var raw []string
	for a.nargs != nargsNone && isValue(next) {
		raw = append(raw, args[next])
		next++
		if a.nargs == nargsOne || a.nargs == nargsZeroOrOne {
			break
		}
	}
	switch {
	case a.nargs == nargsOne && len(raw) == 0:
		return nil, 0, argError(a, "expected one argument")
	case a.nargs == nargsOneOrMore && len(raw) == 0:
		return nil, 0, argError(a, "expected at least one argument")
	}
	return raw, next, nil
}

// check converts each value with the action's type and checks it against
// the choices, as argparse's _get_values does.
func (a *action) check(raw []string) ([]string, error) {
	values := make([]string, len(raw))
	for k, v := range raw {
		values[k] = v
		if a.convert != nil {
			c, err := a.convert(v)
			if err != nil && a.explains {
				return nil, argError(a, "invalid %s value: %s: %v", a.typeName, py.StrRepr(v), err)
			}
			if err != nil {
				return nil, argError(a, "invalid %s value: %s", a.typeName, py.StrRepr(v))
			}
			values[k] = c
		}
		if len(a.choices) > 0 && !contains(a.choices, values[k]) {
			quoted := make([]string, len(a.choices))
			for j, c := range a.choices {
				quoted[j] = py.StrRepr(c)
			}
			return nil, argError(a, "invalid choice: %s (choose from %s)", py.StrRepr(v), strings.Join(quoted, ", "))
		}
	}
	return values, nil
}

// assignment is one option's final values.
type assignment struct {
	action *action
	option string   // the option string used last
	values []string // canonical values; none for flags without values
}

// flag is the go-flags option that stores the assignment.
func (as *assignment) flag() *flags.Option {
	if as.option == "--no-self-timed" {
		return as.action.negated
	}
	return as.action.flag
}

// store writes the values through go-flags. Option.Set is used rather
// than go-flags' argv parser, which would unquote a value such as "\"x\"".
func (as *assignment) store() error {
	f := as.flag()
	if as.action.nargs == nargsNone {
		return f.Set(nil)
	}
	if as.action.nargs == nargsZeroOrOne && len(as.values) == 0 {
		// argparse's const: the option given without its value.
		return f.Set(&f.OptionalValue[0])
	}
	for i := range as.values {
		if err := f.Set(&as.values[i]); err != nil {
			return err
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// optionMatch is a token argparse reads as an option. A nil action is an
// unknown option (reported as unrecognized).
type optionMatch struct {
	action   *action
	option   string  // the option string matched
	explicit *string // value given with "=" (or glued to a short option)
}

// negativeNumber is argparse's _negative_number_matcher (3.12): such a
// token is a value, since no option looks like a negative number.
var negativeNumber = regexp.MustCompile(`^-\d+$|^-\d*\.\d+$`)

// matchOption is argparse's _parse_optional: nil for a value token.
func (t *actionTable) matchOption(arg string) (*optionMatch, error) {
	if arg == "" || arg[0] != '-' {
		return nil, nil
	}
	if a, ok := t.byName[arg]; ok {
		return &optionMatch{action: a, option: arg}, nil
	}
	if len(arg) == 1 {
		return nil, nil
	}
	if name, value, ok := strings.Cut(arg, "="); ok {
		if a, ok := t.byName[name]; ok {
			return &optionMatch{action: a, option: name, explicit: &value}, nil
		}
	}
	// argparse reports every option string the prefix matches. Python's
	// options are matched first, so an abbreviation vLLM accepts keeps
	// its meaning and its ambiguity message; stampede's own options are
	// reached only by a prefix that matches none of Python's.
	found := t.prefixMatches(arg, false)
	if len(found) == 0 {
		found = t.prefixMatches(arg, true)
	}
	switch {
	case len(found) > 1:
		names := make([]string, len(found))
		for i, m := range found {
			names[i] = m.option
		}
		return nil, py.UsageErrorf("ambiguous option: %s could match %s", arg, strings.Join(names, ", "))
	case len(found) == 1:
		return found[0], nil
	}
	if negativeNumber.MatchString(arg) || strings.Contains(arg, " ") {
		return nil, nil
	}
	return &optionMatch{option: arg}, nil
}

// prefixMatches is argparse's _get_option_tuples over the option strings
// of Python's actions (own false) or of stampede's (own true): "--x"
// matches long options starting with "--x" ("--x=v" carries v); "-x..."
// matches the short option "-x" with the rest glued on as its value, and
// options starting with the whole token.
func (t *actionTable) prefixMatches(arg string, own bool) []*optionMatch {
	var found []*optionMatch
	if strings.HasPrefix(arg, "--") {
		prefix, value, hasValue := strings.Cut(arg, "=")
		for _, s := range t.strings {
			a := t.byName[s]
			if a.own != own || !strings.HasPrefix(s, prefix) {
				continue
			}
			m := &optionMatch{action: a, option: s}
			if hasValue {
				v := value
				m.explicit = &v
			}
			found = append(found, m)
		}
		return found
	}
	short, glued := arg[:2], arg[2:]
	for _, s := range t.strings {
		a := t.byName[s]
		switch {
		case a.own != own:
		case s == short:
			v := glued
			found = append(found, &optionMatch{action: a, option: s, explicit: &v})
		case strings.HasPrefix(s, arg):
			found = append(found, &optionMatch{action: a, option: s})
		}
	}
	return found
}

// flexibleRewrite is FlexibleArgumentParser.parse_args's rewriting before
// argparse sees argv:
//
//   - "--help=kw" becomes "--help" and filters the help by kw;
//   - '_' becomes '-' in an option's name (after "--", up to the first
//     '.', and for "--k=v" in k only);
//   - dotted options ("--extra-body.a.b v", "--extra-body.stop+ x,y")
//     are gathered per flag into one JSON object, appended at the end as
//     "--extra-body <json>", so they replace an explicit --extra-body;
//   - options given twice are reported as duplicate keys.
//
// vLLM takes any token starting with '-' and holding a '.' as dotted,
// which turns a negative decimal value such as "-0.5" into garbage; here
// only tokens starting with "--" are dotted, so "--temperature -0.5" works.
func flexibleRewrite(args []string, out *parsedArgv) ([]string, error) {
	processed := make([]string, 0, len(args))
	for _, arg := range args {
		switch {
		case strings.HasPrefix(arg, "--help="):
			out.helpKeyword = strings.ToLower(arg[len("--help="):])
			processed = append(processed, "--help")
		case strings.HasPrefix(arg, "--"):
			if key, value, ok := strings.Cut(arg, "="); ok {
				processed = append(processed, dashName(key)+"="+value)
			} else {
				processed = append(processed, dashName(arg))
			}
		default:
			processed = append(processed, arg)
		}
	}

	var dictKeys []string
	dicts := map[string]*py.JSONValue{}
	var duplicates []string
	seen := map[string]bool{}
	deleted := make([]bool, len(processed))
	for i, arg := range processed {
		if deleted[i] || !strings.HasPrefix(arg, "--") {
			continue
		}
		if !strings.Contains(arg, ".") {
			name, _, _ := strings.Cut(arg, "=")
			if seen[name] {
				duplicates = appendUnique(duplicates, name)
			}
			seen[name] = true
			continue
		}
		name, value, hasValue := strings.Cut(arg, "=")
		if hasValue {
			if !strings.Contains(name, ".") {
				continue // the '.' was in the value
			}
		} else {
			if i+1 >= len(processed) {
				return nil, py.UsageErrorf("argument %s: expected one argument", name)
			}
			value = processed[i+1]
			deleted[i+1] = true
		}
		if strings.HasSuffix(name, "+") {
			name = name[:len(name)-1]
			list := &py.JSONValue{Kind: py.JSONArray}
			for _, item := range strings.Split(value, ",") {
				list.Items = append(list.Items, &py.JSONValue{Kind: py.JSONString, Text: item})
			}
			value = pyDumps(list)
		}
		key, path, _ := strings.Cut(name, ".")
		nested := dottedValue(value)
		keys := strings.Split(path, ".")
		for k := len(keys) - 1; k >= 0; k-- {
			object := &py.JSONValue{Kind: py.JSONObject}
			object.Set(keys[k], nested)
			nested = object
		}
		if dicts[key] == nil {
			dicts[key] = &py.JSONValue{Kind: py.JSONObject}
			dictKeys = append(dictKeys, key)
		}
		for _, d := range mergeDict(dicts[key], nested) {
			duplicates = appendUnique(duplicates, key+"."+d)
		}
		deleted[i] = true
	}
	rewritten := processed[:0:0]
	for i, arg := range processed {
		if !deleted[i] {
			rewritten = append(rewritten, arg)
		}
	}
	for _, key := range dictKeys {
		rewritten = append(rewritten, key, pyDumps(dicts[key]))
	}
	if len(duplicates) > 0 {
		out.warnings = append(out.warnings, "Found duplicate keys "+strings.Join(duplicates, ", "))
	}
	return rewritten, nil
}

func appendUnique(list []string, s string) []string {
	if contains(list, s) {
		return list
	}
	return append(list, s)
}

// dashName replaces '_' with '-' in an option's name: after its leading
// "--", up to the first '.'.
func dashName(arg string) string {
	end := strings.IndexByte(arg[2:], '.')
	if end < 0 {
		end = len(arg)
	} else {
		end += 2
	}
	return arg[:2] + strings.ReplaceAll(arg[2:end], "_", "-") + arg[end:]
}

// dottedValue is a dotted option's value: JSON if it parses, else a
// human-readable int ("1k"), else the string itself.
func dottedValue(s string) *py.JSONValue {
	if n, err := py.Loads(s); err == nil {
		return n
	}
	if v, ok := parseHumanReadableInt(s); ok {
		return &py.JSONValue{Kind: py.JSONNumber, Raw: strconv.FormatInt(v, 10)}
	}
	return &py.JSONValue{Kind: py.JSONString, Text: s}
}

// mergeDict is FlexibleArgumentParser's recursive_dict_update: nested
// objects merge, lists concatenate, anything else is replaced and its key
// reported as a duplicate.
func mergeDict(dst, src *py.JSONValue) []string {
	var dups []string
	for key, value := range src.Members.All() {
		old := dst.Get(key)
		switch {
		case old != nil && value.Kind == py.JSONObject && old.Kind == py.JSONObject:
			for _, d := range mergeDict(old, value) {
				dups = append(dups, key+"."+d)
			}
		case old != nil && value.Kind == py.JSONArray && old.Kind == py.JSONArray:
			old.Items = append(old.Items, value.Items...)
		default:
			if old != nil {
				dups = append(dups, key)
			}
			dst.Set(key, value)
		}
	}
	return dups
}

// pyDumps is Python's json.dumps(n) with default settings (see EncodePy).
func pyDumps(n *py.JSONValue) string {
	var b bytes.Buffer
	n.EncodePy(&b)
	return b.String()
}
