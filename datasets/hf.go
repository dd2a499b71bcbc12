package datasets

// The Hugging Face datasets (--dataset-name hf and the hub datasets it
// dispatches to) are not built: their options parse and are stored, and a
// run that asks for hf stops with a usage error.

// BlazeditFlags are the blazedit dataset's options.
type BlazeditFlags struct {
	BlazeditMinDistance float64 `long:"blazedit-min-distance" default:"0.0" description:"Smallest edit distance kept."`
	BlazeditMaxDistance float64 `long:"blazedit-max-distance" default:"1.0" description:"Largest edit distance kept."`
}

// ASRFlags are the speech-recognition datasets' options.
type ASRFlags struct {
	ASRMaxAudioLenSec float64 `long:"asr-max-audio-len-sec" default:"inf" description:"Drop clips longer than this many seconds."`
	ASRMinAudioLenSec float64 `long:"asr-min-audio-len-sec" default:"0.0" description:"Drop clips shorter than this many seconds."`
}

// HFFlags are the Hugging Face datasets' options.
type HFFlags struct {
	HFSubset    string `long:"hf-subset" description:"Dataset subset (config) name."`
	HFSplit     string `long:"hf-split" description:"Dataset split (default: the dataset's own)."`
	HFName      string `long:"hf-name" description:"Hugging Face id of a dataset given as a local --dataset-path."`
	HFOutputLen *int   `long:"hf-output-len" copy-of:"output-len" description:"Output tokens per request (default: the dataset's own)."`
}

// BFCLFlags are the Berkeley Function Calling Leaderboard dataset's options.
type BFCLFlags struct {
	BFCLCategories CommaList `long:"bfcl-categories" description:"Comma-separated categories (default: simple,live_simple,multiple)."`
}

var hfDataset = &Dataset{Name: "hf"}
