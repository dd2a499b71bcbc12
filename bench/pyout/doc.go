// Package pyout writes Python's outputs: the console block, the result
// JSON and the PyTorch benchmark records, byte for byte as vllm bench
// serve writes them. Console is its row writer, which stampede's own
// blocks in package bench share so that they line up with Python's.
//
// Files by duty: figures.go (the one table of the result's labels and
// JSON keys, which stampede's HTML report reads too), report_params.go
// (what the outputs read of the run), console_block.go (the result block, the banner, Console),
// result_json.go (the result JSON and its file name), result_pytorch.go
// (the PyTorch benchmark format), percentile_label.go, terminal.go
// (escaping server text for the terminal).
package pyout
