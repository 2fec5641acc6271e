package jobs

import "time"

// A scheduled time is missed when it runs late by more than the job's
// misfire threshold, counted in whole seconds: with a threshold of n
// seconds a time runs as scheduled up to n+1 seconds (exclusive) after it,
// so a threshold of 0 still allows the sub-second delay of any real
// scheduler. Once missed, the job's [IfMissed] policy decides:
//
//   - [Skip]: a missed time does not run; the job moves on to its first
//     scheduled time that is not missed (which runs at once when it is
//     already due, late by no more than the threshold).
//   - [RunOnce]: one run stands for the missed time and every other
//     missed time after it; the job then moves on to its first scheduled
//     time that is not missed.
//   - [RunAll]: every missed time runs, oldest first, one run each.
//
// Due times that are not missed run one by one whatever the policy. After
// a 10-minute outage with a small threshold, a job due every minute runs 0
// (Skip), 1 (RunOnce) or 10 (RunAll) times for the ten missed minutes, and
// then on time.

// misfireDecision is what a scheduler does with a job's due scheduled time.
type misfireDecision struct {
	// run says whether the scheduled time runs.
	run bool
	// next is the job's next scheduled time once this one is dealt with;
	// hasNext is false when the trigger has none.
	next    time.Time
	hasNext bool
}

// missed reports whether scheduled, due at now, is late by more than
// threshold (see above).
func missed(scheduled, now time.Time, threshold time.Duration) bool {
	return now.Sub(scheduled) >= threshold+time.Second
}

// decideMisfire decides, at now, what happens to the due scheduled time of
// a job with trigger trig, misfire threshold threshold and policy policy.
// It is a pure function of its arguments, so a scheduler that repeats the
// decision with the same now (the claim time a job records) gets the same
// answer.
func decideMisfire(trig Trigger, scheduled, now time.Time, threshold time.Duration, policy IfMissed) misfireDecision {
	if !missed(scheduled, now, threshold) || policy == RunAll {
		next, ok := trig.Next(scheduled)
		return misfireDecision{run: true, next: next, hasNext: ok}
	}
	// The first time that is not missed lies after this cutoff, itself
	// at or after scheduled.
	next, ok := trig.Next(now.Add(-threshold - time.Second))
	return misfireDecision{run: policy == RunOnce, next: next, hasNext: ok}
}
