package clockskew

// Samples returns how many responses w has observed.
func Samples(w *Watch) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.samples
}
