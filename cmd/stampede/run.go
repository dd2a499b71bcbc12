package main

import "github.com/stampede-bench/stampede/bench"

// runBenchmark runs one benchmark; tests replace it.
var runBenchmark = bench.Run
