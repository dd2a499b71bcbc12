package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/stampede-bench/stampede/bench/endpoint"
	"github.com/stampede-bench/stampede/bench/pyout"
	"github.com/stampede-bench/stampede/bench/report"
)

// The result file's name is Python's, and holds the server's model id when
// --model is omitted: an id of a few hundred bytes makes a name the
// filesystem refuses (ENAMETOOLONG), which Python finds only when it
// saves, after the whole run. stampede checks the name and its directory
// before the clock starts: a directory it cannot write to is an error
// then, and a name too long is shortened, the same way at the check and
// at the save.

// checkResultPath is the check before the clock starts, when the run saves
// a result (or draws a timeline beside one): the result directory is
// created and written to once, and a name whose files (the result, its
// sidecar and side files) would not fit the filesystem's NAME_MAX or
// PATH_MAX is replaced by fitResultPath's, which the save uses too; it
// says so on stderr. The name is the one the run would save under now,
// its date aside. A cluster run has its directory checked only.
func (r *run) checkResultPath(model endpoint.Model) error {
	c := r.cfg
	if !c.SaveResult && !c.AppendResult && !c.PlotTimeline {
		return nil
	}
	settings := r.runSettings(model, nil, 0)
	name, err := pyout.ResultFilename(&settings, time.Now().Format(pyout.DateLayout))
	if err != nil {
		return err
	}
	dir := filepath.Dir(name)
	if err := report.CheckWritableDir(dir); err != nil {
		return resultDirError(c.ResultDir, dir, err)
	}
	if c.Clustered() {
		// A cluster's agent 0 saves through bench/cluster's merge, under
		// Python's name.
		return nil
	}
	r.nameMax = report.NameMax(dir)
	fitted, err := report.FitResultPath(name, r.nameMax)
	if err != nil {
		return err
	}
	if fitted != name {
		fmt.Fprintf(r.stderr, "stampede: the result file's name (%d bytes) and its side files' do not fit this filesystem's "+
			"limits (%d bytes a name, %d a path); saving as %s instead (the date is the save's)\n",
			len(filepath.Base(name)), r.nameMax, report.PathMax-1, fitted)
	}
	if c.AppendResult {
		// An existing file is appended to, so it must open for writing.
		if f, err := os.OpenFile(fitted, os.O_WRONLY|os.O_APPEND, 0); err == nil {
			f.Close()
		} else if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("--append-result: result file %s cannot be written: %w", fitted, err)
		}
	}
	return nil
}

// resultDirError names the flag the unwritable directory came from.
func resultDirError(flagDir, dir string, err error) error {
	if flagDir != "" {
		return fmt.Errorf("--result-dir %s: the result cannot be saved there: %w", flagDir, err)
	}
	return fmt.Errorf("result directory %s: the result cannot be saved there: %w", dir, err)
}
