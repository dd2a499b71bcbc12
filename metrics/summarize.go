package metrics

// Summarize computes Stats (milliseconds) from values in seconds with the
// formulas Compute uses for each metric (numpy's mean and population std
// in its summation order, linear-interpolation percentiles), for callers
// that group requests their own way (per turn of a conversation). values
// is left as it was.
func Summarize(valuesSec []float64, percentiles []float64) Stats {
	return summarize(valuesSec, percentiles)
}
