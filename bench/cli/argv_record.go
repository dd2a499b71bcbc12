package cli

import (
	"net/url"
	"reflect"
	"strings"
)

// redacted stands for a secret in the record of a command line.
const redacted = "<redacted>"

// credentialHeaders are the --header keys whose values are credentials,
// lower-case.
var credentialHeaders = map[string]bool{
	"authorization": true, "proxy-authorization": true, "cookie": true, "x-api-key": true, "api-key": true,
}

// secretOptions are the long names of the options whose value is a
// secret (value-name SECRET in the option table), as namespace redacts
// them.
var secretOptions = func() map[string]bool {
	out := map[string]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				walk(f.Type)
				continue
			}
			if f.Tag.Get("value-name") == "SECRET" {
				out[f.Tag.Get("long")] = true
			}
		}
	}
	walk(reflect.TypeOf(Flags{}))
	return out
}()

// recordArgv is args as the run's manifest keeps them: every token as
// given, except secrets: a SECRET option's value, a credential header's
// value and a URL's password become "<redacted>". A rerun of a command
// line that needed them takes them again after its own "--".
func recordArgv(args []string) []string {
	out := make([]string, len(args))
	option := "" // the long option the token belongs to
	for i, a := range args {
		out[i] = a
		if strings.HasPrefix(a, "--") {
			name, value, hasValue := strings.Cut(a[2:], "=")
			option = name
			if hasValue {
				out[i] = "--" + name + "=" + redactValue(name, value)
			}
			continue
		}
		out[i] = redactValue(option, a)
	}
	return out
}

// redactValue is one value of the option named option, redacted.
func redactValue(option, value string) string {
	switch {
	case secretOptions[option]:
		return redacted
	case option == "header" || option == "server-metrics-header":
		if key, _, ok := strings.Cut(value, "="); ok && credentialHeaders[strings.ToLower(strings.TrimSpace(key))] {
			return key + "=" + redacted
		}
	case strings.Contains(value, "://"):
		if u, err := url.Parse(value); err == nil && u.User != nil {
			if _, has := u.User.Password(); has {
				u.User = url.UserPassword(u.User.Username(), redacted)
				return strings.Replace(u.String(), url.QueryEscape(redacted), redacted, 1)
			}
		}
	}
	return value
}
