package cli

import (
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"

	flags "github.com/jessevdk/go-flags"
	"github.com/stampede-bench/stampede/bench/plan"
	"golang.org/x/sys/unix"
)

// Help is rendered the way argparse renders `vllm bench serve --help`
// (invocation, then the text wrapped at column 24, "(default: ...)"
// appended), from the go-flags option table. go-flags' own renderer
// aligns every description after the longest option, which the
// --dataset-name and --backend choice lists push off the screen.

// helpPosition is argparse's max_help_position: where help text starts.
const helpPosition = 24

// helpDescription introduces the option list.
const helpDescription = "Benchmark an LLM serving endpoint. Accepts the options of `vllm bench serve`, " +
	"prints the same result block and writes the same result JSON."

// WriteHelp prints the option help grouped as argparse groups the options
// of `vllm bench serve`, followed by stampede's own groups. A keyword (from
// --help=keyword) narrows it as FlexibleArgumentParser does: "all" is
// everything, a group title shows that group, anything else shows the
// options whose names contain it ('_' read as '-'); a narrowed help has no
// usage line, as in Python. The width is argparse's: $COLUMNS, else the
// terminal's when w is one, else 80.
func WriteHelp(w io.Writer, keyword string, backends []plan.Backend) error {
	_, err := io.WriteString(w, renderHelp(keyword, helpWidth(w), backends))
	return err
}

// Verb is one subcommand as a command's help lists it: how it is called
// and what it does.
type Verb struct{ Usage, What string }

// WriteVerbs prints verbs under title the way argparse lists options: the
// usage in a column and the text after it, or on the next lines when the
// usage is wider than the column, wrapped to the help's width.
func WriteVerbs(w io.Writer, title string, verbs []Verb) error {
	var b strings.Builder
	writeVerbs(&b, title, verbs, helpWidth(w))
	_, err := io.WriteString(w, b.String())
	return err
}

func writeVerbs(b *strings.Builder, title string, verbs []Verb, width int) {
	b.WriteString(title + ":\n")
	for _, v := range verbs {
		writeHelpRow(b, v.Usage, v.What, width)
	}
}

// WriteCommandHelp prints the help of a command whose default verb is
// serve (`stampede --help`): its usage line, serve's description, its
// verbs (WriteVerbs), the note after them, then serve's option groups as
// WriteHelp prints them, in Python's order. A first look finds what the
// command does and how to call it before the hundreds of lines of
// options.
func WriteCommandHelp(w io.Writer, usage, title string, verbs []Verb, note string, backends []plan.Backend) error {
	_, err := io.WriteString(w, renderCommandHelp(usage, title, verbs, note, helpWidth(w), backends))
	return err
}

func renderCommandHelp(usage, title string, verbs []Verb, note string, width int, backends []plan.Backend) string {
	var b strings.Builder
	b.WriteString(usage + "\n\n" + wrapText(helpDescription, width, "") + "\n\n")
	writeVerbs(&b, title, verbs, width)
	b.WriteString("\n" + wrapText(note, width, "") + "\n")
	writeHelpGroups(&b, helpGroups(newFlagParser(&Flags{}, backends)), width)
	return b.String()
}

// helpWidth is the width help wraps to: argparse's, $COLUMNS (else the
// terminal's when w is one, else 80) less 2.
func helpWidth(w io.Writer) int {
	width := 80
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		width = n
	} else if f, ok := w.(*os.File); ok {
		if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
			width = int(ws.Col)
		}
	}
	return width - 2
}

// writeHelpGroups writes every option group, in table order.
func writeHelpGroups(b *strings.Builder, groups []*flags.Group, width int) {
	for _, g := range groups {
		writeHelpSection(b, g.ShortDescription, g.Options(), width)
	}
}

func renderHelp(keyword string, width int, backends []plan.Backend) string {
	var f Flags
	p := newFlagParser(&f, backends)
	var b strings.Builder
	groups := helpGroups(p)
	keyword = strings.ReplaceAll(strings.ToLower(keyword), "_", "-")
	switch {
	case keyword == "" || keyword == "all":
		fmt.Fprintf(&b, "usage: %s [-h] [OPTIONS]\n\n", ProgramName)
		b.WriteString(wrapText(helpDescription, width, "") + "\n")
		writeHelpGroups(&b, groups, width)
	default:
		for _, g := range groups {
			if strings.ToLower(g.ShortDescription) == keyword {
				writeHelpSection(&b, g.ShortDescription, g.Options(), width)
				return b.String()[1:]
			}
		}
		var matched []*flags.Option
		for _, g := range groups {
			for _, o := range g.Options() {
				if strings.Contains(strings.Join(optionStrings(o), " "), keyword) {
					matched = append(matched, o)
				}
			}
		}
		if len(matched) == 0 {
			fmt.Fprintf(&b, "No group or arguments matching '%s'.\n"+
				"Use '--help' to see available groups or '--help=all' to see all available parameters.\n", keyword)
			return b.String()
		}
		writeHelpSection(&b, fmt.Sprintf("Arguments matching '%s'", keyword), matched, width)
		return b.String()[1:]
	}
	return b.String()
}

// helpGroups lists the option groups in table order.
func helpGroups(p *flags.Parser) []*flags.Group {
	var out []*flags.Group
	var visit func(g *flags.Group)
	visit = func(g *flags.Group) {
		out = append(out, g)
		for _, sub := range g.Groups() {
			visit(sub)
		}
	}
	for _, g := range p.Groups() {
		visit(g)
	}
	return out
}

func optionStrings(o *flags.Option) []string {
	var s []string
	if o.ShortName != 0 {
		s = append(s, "-"+string(o.ShortName))
	}
	return append(s, "--"+o.LongName)
}

func writeHelpSection(b *strings.Builder, title string, options []*flags.Option, width int) {
	fmt.Fprintf(b, "\n%s:\n", title)
	for _, o := range options {
		if o.LongName == "no-self-timed" {
			continue // listed with --self-timed, as BooleanOptionalAction is
		}
		text := o.Description
		if o.LongName != "help" && !strings.Contains(text, "(default") {
			text += " (default: " + helpDefault(o) + ")"
		}
		writeHelpRow(b, helpInvocation(o), text, width)
	}
}

// writeHelpRow is one row of help, argparse's way: invocation in a column
// of helpPosition, text after it, or on the next lines when the
// invocation does not fit.
func writeHelpRow(b *strings.Builder, invocation, text string, width int) {
	body := wrapText(text, max(width-helpPosition, 11), strings.Repeat(" ", helpPosition))
	if len(invocation) <= helpPosition-4 {
		fmt.Fprintf(b, "  %-*s  %s\n", helpPosition-4, invocation, strings.TrimLeft(body, " "))
	} else {
		fmt.Fprintf(b, "  %s\n%s\n", invocation, body)
	}
}

// helpInvocation is argparse's option column: "--seed SEED",
// "--backend {vllm,openai,...}", "--header [KEY=VALUE ...]".
func helpInvocation(o *flags.Option) string {
	names := strings.Join(optionStrings(o), ", ")
	switch o.LongName {
	case "self-timed":
		return "--self-timed, --no-self-timed"
	case "help":
		return names
	}
	typ := o.Field().Type
	if typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	if typ.Kind() == reflect.Bool {
		return names
	}
	metavar := o.ValueName
	if metavar == "" {
		metavar = strings.ToUpper(strings.ReplaceAll(o.LongName, "-", "_"))
	}
	if len(o.Choices) > 0 {
		metavar = "{" + strings.Join(o.Choices, ",") + "}"
	}
	switch o.Field().Tag.Get("nargs") {
	case "?":
		return names + " [" + metavar + "]"
	case "*":
		return names + " [" + metavar + " ...]"
	case "+":
		return names + " " + metavar + " [" + metavar + " ...]"
	}
	return names + " " + metavar
}

// helpDefault is the "%(default)s" argparse appends: Python's str() of
// the default, None when there is none.
func helpDefault(o *flags.Option) string {
	if o.DefaultMask != "" {
		return o.DefaultMask
	}
	if len(o.Default) > 0 {
		return strings.Join(o.Default, ",")
	}
	typ := o.Field().Type
	if typ.Kind() == reflect.Bool {
		return "False"
	}
	return "None"
}

// wrapText is textwrap.wrap(text, width) joined with newlines, every line
// indented by indent.
func wrapText(text string, width int, indent string) string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		switch {
		case line == "":
			line = word
		case len(line)+1+len(word) <= width:
			line += " " + word
		default:
			lines = append(lines, indent+line)
			line = word
		}
	}
	if line != "" {
		lines = append(lines, indent+line)
	}
	return strings.Join(lines, "\n")
}
