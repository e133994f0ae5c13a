package spec

import "github.com/agext/levenshtein"

// didYouMean returns the suggestion closest to given, or "" when none is
// close enough to be a plausible typo (the same rule as hcl's didyoumean).
func didYouMean(given string, suggestions []string) string {
	best, bestD := "", 3
	for _, s := range suggestions {
		if d := levenshtein.Distance(given, s, nil); d < bestD {
			best, bestD = s, d
		}
	}
	return best
}
