// Package cli is `stampede serve`'s command line: vLLM's option table
// (Flags), argparse's and FlexibleArgumentParser's rules applied to argv
// (prefixes, abbreviations, Python's int and float forms, duplicate keys),
// the help text, and the checks and rewrites main_async makes before it
// contacts the server, giving the run's plan (package plan): the option
// values converted from Flags, validated, rewritten and with the derived
// values filled in. It knows the backends only as the rows bench passes in
// (Backend).
package cli
